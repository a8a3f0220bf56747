// The axon Philox stream, many blocks at a time: the random bits, and normal
// values made from them.
#pragma once

#include <cstdint>

namespace axon {

// lanes[l][k], for k in [0, count) and l in [0, 4): lane l of Philox4x32-10
// block (first_block + k) under `seed`, subsequence 0; that is, the (l + 1)-th
// value at::Philox4_32(seed, 0, first_block + k) returns. Bit-identical to
// that engine, several blocks per vector instruction.
void philox_blocks(uint64_t seed, uint64_t first_block, int64_t count, uint32_t* const lanes[4]);

// How philox_blocks makes its blocks: one block per 32-bit lane of an
// AVX-512 or AVX2 vector, or the compiler's code for one block at a time.
// It takes the widest the host runs; tests check every path the host runs
// against the same reference, whichever the host would take.
enum class PhiloxPath { kCompiled, kAvx2, kAvx512 };
bool host_runs_philox_path(PhiloxPath path);
// philox_blocks by `path`, which the host must run.
void philox_blocks_by(PhiloxPath path, uint64_t seed, uint64_t first_block, int64_t count, uint32_t* const lanes[4]);

// For k in [0, count): lanes 0 and 1 of block (first_block + k), as above,
// make through Box-Muller in float the pair cos_part[k], sin_part[k]:
//   u1 = (lane0 + 1) / 2^32, u2 = lane1 / 2^32 (each rounded to float),
//   cos_part = sqrt(-2 ln u1) cos(2 pi u2), sin_part = sqrt(-2 ln u1) sin(2 pi u2).
// The logarithm, sine and cosine are polynomials written for this (within a
// few float ulps of the exact values; tests/test_random.py compares them with
// a float64 reference), so that the whole batch vectorizes: scalar libm calls
// cost 11 ns per value, more than the random bits.
void standard_normal_pairs(uint64_t seed, uint64_t first_block, int64_t count, float* cos_part, float* sin_part);

}  // namespace axon
