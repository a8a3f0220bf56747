#include "host_execution/philox_batches.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "host_execution/per_instruction_set.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define AXON_PHILOX_VECTORS 1
#endif

namespace axon {
namespace {

// Blocks per batch: the arrays below stay in registers or L1, and every loop
// over them is a few vector instructions wide.
constexpr int kBatch = 16;

// Philox4x32-10's multipliers and key increments (Salmon et al., SC'11; the
// same constants as ATen's PhiloxRNGEngine.h).
constexpr uint32_t kMultiplier0 = 0xD2511F53;
constexpr uint32_t kMultiplier1 = 0xCD9E8D57;
constexpr uint32_t kKeyStep0 = 0x9E3779B9;
constexpr uint32_t kKeyStep1 = 0xBB67AE85;
constexpr int kRounds = 10;

// The four lanes of blocks first_block .. first_block + kBatch - 1:
// lanes[l][j] is lane l of block first_block + j. The rounds are
// at::Philox4_32's, written one block per vector lane.
inline void philox_batch(uint32_t key0, uint32_t key1, uint64_t first_block, uint32_t (&lanes)[4][kBatch]) {
  for (int j = 0; j < kBatch; ++j) {
    const uint64_t block = first_block + static_cast<uint64_t>(j);
    uint32_t c0 = static_cast<uint32_t>(block);
    uint32_t c1 = static_cast<uint32_t>(block >> 32);
    uint32_t c2 = 0;  // subsequence 0
    uint32_t c3 = 0;
    uint32_t k0 = key0;
    uint32_t k1 = key1;
#pragma GCC unroll 10
    for (int round = 0; round < kRounds; ++round) {
      const uint64_t product0 = static_cast<uint64_t>(kMultiplier0) * c0;
      const uint64_t product1 = static_cast<uint64_t>(kMultiplier1) * c2;
      c0 = static_cast<uint32_t>(product1 >> 32) ^ c1 ^ k0;
      c2 = static_cast<uint32_t>(product0 >> 32) ^ c3 ^ k1;
      c1 = static_cast<uint32_t>(product1);
      c3 = static_cast<uint32_t>(product0);
      k0 += kKeyStep0;
      k1 += kKeyStep1;
    }
    lanes[0][j] = c0;
    lanes[1][j] = c1;
    lanes[2][j] = c2;
    lanes[3][j] = c3;
  }
}

#if defined(AXON_PHILOX_VECTORS)
// Philox blocks in 32-bit vector lanes, one block per lane: sixteen per
// vector with AVX-512, eight with AVX2. The compiler's vectorization of
// philox_batch widens every lane to 64 bits for the products (with permutes
// around them): about 2.3 ns a block with AVX-512, and on an AVX2-only host
// randint's 2^20 values took 4.2-5.0 ms against the CPU's 3.4. Here the
// high halves come from two widening multiplies (even and odd lanes), and the
// low halves from one 32-bit multiply (AVX-512) or from the same two (AVX2).
//
// GCC 12 warns that the pass-through operand its own intrinsics leave
// undefined (_mm512_mul_epu32, _mm512_srli_epi64) is or may be used
// uninitialized; the unmasked forms never read it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f"))) inline __m512i multiply_high(__m512i a, __m512i b) {
  const __m512i even = _mm512_mul_epu32(a, b);
  const __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), _mm512_srli_epi64(b, 32));
  return _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
}

__attribute__((target("avx512f"))) void philox_blocks_avx512(uint32_t key0, uint32_t key1, uint64_t first_block,
                                                             int64_t count, uint32_t* const lanes[4]) {
  const __m512i multiplier0 = _mm512_set1_epi32(static_cast<int>(kMultiplier0));
  const __m512i multiplier1 = _mm512_set1_epi32(static_cast<int>(kMultiplier1));
  const __m512i offsets = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (int64_t done = 0; done < count; done += 16) {
    const uint64_t first = first_block + static_cast<uint64_t>(done);
    const __m512i low = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(first)));
    const __m512i high = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(first >> 32)));
    // A block's counter is (low word, high word, 0, 0); the high word gains
    // one in the lanes whose low word wrapped past 2^32.
    __m512i c0 = _mm512_add_epi32(low, offsets);
    __m512i c1 = _mm512_mask_add_epi32(high, _mm512_cmplt_epu32_mask(c0, low), high, _mm512_set1_epi32(1));
    __m512i c2 = _mm512_setzero_si512();
    __m512i c3 = _mm512_setzero_si512();
    uint32_t k0 = key0;
    uint32_t k1 = key1;
    for (int round = 0; round < kRounds; ++round) {
      const __m512i next0 = _mm512_xor_si512(_mm512_xor_si512(multiply_high(multiplier1, c2), c1),
                                             _mm512_set1_epi32(static_cast<int>(k0)));
      const __m512i next2 = _mm512_xor_si512(_mm512_xor_si512(multiply_high(multiplier0, c0), c3),
                                             _mm512_set1_epi32(static_cast<int>(k1)));
      c1 = _mm512_mullo_epi32(multiplier1, c2);
      c3 = _mm512_mullo_epi32(multiplier0, c0);
      c0 = next0;
      c2 = next2;
      k0 += kKeyStep0;
      k1 += kKeyStep1;
    }
    const int64_t blocks = std::min<int64_t>(16, count - done);
    const auto kept = static_cast<__mmask16>(blocks == 16 ? 0xFFFF : (1u << blocks) - 1);
    _mm512_mask_storeu_epi32(lanes[0] + done, kept, c0);
    _mm512_mask_storeu_epi32(lanes[1] + done, kept, c1);
    _mm512_mask_storeu_epi32(lanes[2] + done, kept, c2);
    _mm512_mask_storeu_epi32(lanes[3] + done, kept, c3);
  }
}

#pragma GCC diagnostic pop

// The high and low 32-bit halves of multiplier * x in each lane, both from
// the two widening multiplies (AVX2's 32-bit low multiply is two micro-ops
// of long latency on some hosts, and a shift and a blend are one each).
struct ProductHalves {
  __m256i high;
  __m256i low;
};

// `multiplier` holds the same value in every lane, so its odd lanes need no shift.
__attribute__((target("avx2"))) inline ProductHalves multiply(__m256i multiplier, __m256i x) {
  const __m256i even = _mm256_mul_epu32(multiplier, x);
  const __m256i odd = _mm256_mul_epu32(multiplier, _mm256_srli_epi64(x, 32));
  return {_mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA),
          _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA)};
}

__attribute__((target("avx2"))) void philox_blocks_avx2(uint32_t key0, uint32_t key1, uint64_t first_block,
                                                        int64_t count, uint32_t* const lanes[4]) {
  const __m256i multiplier0 = _mm256_set1_epi32(static_cast<int>(kMultiplier0));
  const __m256i multiplier1 = _mm256_set1_epi32(static_cast<int>(kMultiplier1));
  const __m256i offsets = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  // AVX2 compares signed lanes only; flipping both operands' sign bits makes
  // the signed order the unsigned one.
  const __m256i sign_bits = _mm256_set1_epi32(static_cast<int>(0x80000000u));
  __m256i round_keys[kRounds][2];
  for (int round = 0; round < kRounds; ++round) {
    round_keys[round][0] = _mm256_set1_epi32(static_cast<int>(key0 + static_cast<uint32_t>(round) * kKeyStep0));
    round_keys[round][1] = _mm256_set1_epi32(static_cast<int>(key1 + static_cast<uint32_t>(round) * kKeyStep1));
  }
  for (int64_t done = 0; done < count; done += 8) {
    const uint64_t first = first_block + static_cast<uint64_t>(done);
    const __m256i low = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(first)));
    const __m256i high = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(first >> 32)));
    // As above: the high word gains one where the low word wrapped (c0 < low,
    // unsigned), where the comparison's all-ones lane is -1.
    __m256i c0 = _mm256_add_epi32(low, offsets);
    const __m256i wrapped = _mm256_cmpgt_epi32(_mm256_xor_si256(low, sign_bits), _mm256_xor_si256(c0, sign_bits));
    __m256i c1 = _mm256_sub_epi32(high, wrapped);
    __m256i c2 = _mm256_setzero_si256();
    __m256i c3 = _mm256_setzero_si256();
#pragma GCC unroll 10
    for (int round = 0; round < kRounds; ++round) {
      const ProductHalves product0 = multiply(multiplier0, c0);
      const ProductHalves product1 = multiply(multiplier1, c2);
      c0 = _mm256_xor_si256(_mm256_xor_si256(product1.high, c1), round_keys[round][0]);
      c2 = _mm256_xor_si256(_mm256_xor_si256(product0.high, c3), round_keys[round][1]);
      c1 = product1.low;
      c3 = product0.low;
    }
    const int64_t blocks = std::min<int64_t>(8, count - done);
    const __m256i kept = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(blocks)), offsets);
    _mm256_maskstore_epi32(reinterpret_cast<int*>(lanes[0] + done), kept, c0);
    _mm256_maskstore_epi32(reinterpret_cast<int*>(lanes[1] + done), kept, c1);
    _mm256_maskstore_epi32(reinterpret_cast<int*>(lanes[2] + done), kept, c2);
    _mm256_maskstore_epi32(reinterpret_cast<int*>(lanes[3] + done), kept, c3);
  }
}

// Whether the host runs each path of the functions above.
bool host_has_avx512f() {
  static const bool avx512f = __builtin_cpu_supports("avx512f");
  return avx512f;
}

bool host_has_avx2() {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
}
#endif

// The widest path the host runs.
inline PhiloxPath widest_philox_path() {
#if defined(AXON_PHILOX_VECTORS)
  if (host_has_avx512f()) return PhiloxPath::kAvx512;
  if (host_has_avx2()) return PhiloxPath::kAvx2;
#endif
  return PhiloxPath::kCompiled;
}

// Philox blocks by `path` where it is a vector path; false (and nothing
// written) for the compiled one.
inline bool philox_blocks_in_vectors(PhiloxPath path, uint32_t key0, uint32_t key1, uint64_t first_block, int64_t count,
                                     uint32_t* const lanes[4]) {
  switch (path) {
#if defined(AXON_PHILOX_VECTORS)
    case PhiloxPath::kAvx2:
      philox_blocks_avx2(key0, key1, first_block, count, lanes);
      return true;
    case PhiloxPath::kAvx512:
      philox_blocks_avx512(key0, key1, first_block, count, lanes);
      return true;
#endif
    default:
      return false;
  }
}

// The blocks one at a time (the compiler vectorizes philox_batch as it can),
// kBatch at a time.
inline void philox_blocks_compiled(uint32_t key0, uint32_t key1, uint64_t first_block, int64_t count,
                                   uint32_t* const lanes[4]) {
  uint32_t batch[4][kBatch];
  for (int64_t done = 0; done < count; done += kBatch) {
    philox_batch(key0, key1, first_block + static_cast<uint64_t>(done), batch);
    const auto n = static_cast<size_t>(std::min<int64_t>(kBatch, count - done));
    for (int lane = 0; lane < 4; ++lane) std::memcpy(lanes[lane] + done, batch[lane], n * sizeof(uint32_t));
  }
}

// The four lanes of kBatch blocks, as philox_batch makes them, by a vector
// path where the host has one.
inline void philox_batch_lanes(uint32_t key0, uint32_t key1, uint64_t first_block, uint32_t (&lanes)[4][kBatch]) {
  uint32_t* const pointers[4] = {lanes[0], lanes[1], lanes[2], lanes[3]};
  if (!philox_blocks_in_vectors(widest_philox_path(), key0, key1, first_block, kBatch, pointers))
    philox_batch(key0, key1, first_block, lanes);
}

// ln(x) for a positive normal float. x = 2^e * m with m in [sqrt(1/2),
// sqrt(2)); ln(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.172, whose
// odd series to s^9 is exact to float precision (the next term is below
// 1e-9). 0x3f3504f3 is sqrt(1/2)'s bit pattern: subtracting it moves the
// exponent's boundary from 1 to sqrt(1/2).
inline float log_positive(float x) {
  const auto bits = std::bit_cast<uint32_t>(x);
  const int32_t exponent = static_cast<int32_t>(bits - 0x3f3504f3u) >> 23;
  const auto m = std::bit_cast<float>(bits - (static_cast<uint32_t>(exponent) << 23));
  const float s = (m - 1.0f) / (m + 1.0f);
  const float s2 = s * s;
  float series = 1.0f / 9.0f;
  series = series * s2 + 1.0f / 7.0f;
  series = series * s2 + 1.0f / 5.0f;
  series = series * s2 + 1.0f / 3.0f;
  series = series * s2 + 1.0f;
  // ln 2 split so that exponent * kLn2High is exact.
  constexpr float kLn2High = 0.693145751953125f;
  constexpr float kLn2Low = 1.4286068202862268e-06f;
  const auto e = static_cast<float>(exponent);
  return e * kLn2High + (e * kLn2Low + 2.0f * s * series);
}

// float(x), rounded once as the conversion rounds, from two exact signed
// conversions (AVX2 has no unsigned one, and the loop would not vectorize).
inline float to_float(uint32_t x) {
  return static_cast<float>(static_cast<int32_t>(x >> 16)) * 65536.0f +
         static_cast<float>(static_cast<int32_t>(x & 0xffffu));
}

inline void normal_batch(uint32_t key0, uint32_t key1, uint64_t first_block, float* cos_part, float* sin_part) {
  uint32_t lanes[4][kBatch];
  philox_batch_lanes(key0, key1, first_block, lanes);
  const uint32_t* lane0 = lanes[0];
  const uint32_t* lane1 = lanes[1];
  constexpr float kTwoToMinus32 = 1.0f / 4294967296.0f;
  for (int j = 0; j < kBatch; ++j) {
    // u1 in (0, 1] keeps the logarithm finite.
    const float u1 = (to_float(lane0[j]) + 1.0f) * kTwoToMinus32;
    const float radius = std::sqrt(-2.0f * log_positive(u1));
    // cos and sin of 2 pi u2: u2 in quarter turns rounded to the nearest, q,
    // leaves an angle a in [-pi/4, pi/4], where the Taylor series below are
    // exact to float precision; q mod 4 then rotates (cos a, sin a).
    const float quarters = 4.0f * (to_float(lane1[j]) * kTwoToMinus32);
    const int quadrant_number = static_cast<int>(quarters + 0.5f);  // quarters >= 0: truncation rounds down
    const auto nearest = static_cast<float>(quadrant_number);
    const float a = (quarters - nearest) * 1.57079632679489661923f;
    const float a2 = a * a;
    float sin_a = -1.0f / 39916800.0f;
    sin_a = sin_a * a2 + 1.0f / 362880.0f;
    sin_a = sin_a * a2 - 1.0f / 5040.0f;
    sin_a = sin_a * a2 + 1.0f / 120.0f;
    sin_a = sin_a * a2 - 1.0f / 6.0f;
    sin_a = (sin_a * a2) * a + a;
    float cos_a = 1.0f / 479001600.0f;
    cos_a = cos_a * a2 - 1.0f / 3628800.0f;
    cos_a = cos_a * a2 + 1.0f / 40320.0f;
    cos_a = cos_a * a2 - 1.0f / 720.0f;
    cos_a = cos_a * a2 + 1.0f / 24.0f;
    cos_a = cos_a * a2 - 0.5f;
    cos_a = cos_a * a2 + 1.0f;
    // Quadrant q: (cos, sin) = (c, s), (-s, c), (-c, -s), (s, -c) for q = 0..3.
    const int quadrant = quadrant_number & 3;
    const float c = (quadrant & 1) ? sin_a : cos_a;
    const float s = (quadrant & 1) ? cos_a : sin_a;
    cos_part[j] = radius * (((quadrant + 1) & 2) ? -c : c);
    sin_part[j] = radius * ((quadrant & 2) ? -s : s);
  }
}

}  // namespace

// The functions below are compiled per instruction set (per_instruction_set.h):
// in the baseline x86-64 copy these loops run four lanes wide at most (and
// Philox's 64-bit products not at all).

AXON_PER_INSTRUCTION_SET
void philox_blocks(uint64_t seed, uint64_t first_block, int64_t count, uint32_t* const lanes[4]) {
  const auto key0 = static_cast<uint32_t>(seed);
  const auto key1 = static_cast<uint32_t>(seed >> 32);
  if (!philox_blocks_in_vectors(widest_philox_path(), key0, key1, first_block, count, lanes)) {
    philox_blocks_compiled(key0, key1, first_block, count, lanes);
  }
}

AXON_PER_INSTRUCTION_SET
void standard_normal_pairs(uint64_t seed, uint64_t first_block, int64_t count, float* cos_part, float* sin_part) {
  const auto key0 = static_cast<uint32_t>(seed);
  const auto key1 = static_cast<uint32_t>(seed >> 32);
  float batch_cos[kBatch], batch_sin[kBatch];
  for (int64_t done = 0; done < count; done += kBatch) {
    normal_batch(key0, key1, first_block + static_cast<uint64_t>(done), batch_cos, batch_sin);
    const int64_t n = std::min<int64_t>(kBatch, count - done);
    std::memcpy(cos_part + done, batch_cos, static_cast<size_t>(n) * sizeof(float));
    std::memcpy(sin_part + done, batch_sin, static_cast<size_t>(n) * sizeof(float));
  }
}

bool host_runs_philox_path(PhiloxPath path) {
  switch (path) {
    case PhiloxPath::kCompiled:
      return true;
#if defined(AXON_PHILOX_VECTORS)
    case PhiloxPath::kAvx2:
      return host_has_avx2();
    case PhiloxPath::kAvx512:
      return host_has_avx512f();
#endif
    default:
      return false;
  }
}

void philox_blocks_by(PhiloxPath path, uint64_t seed, uint64_t first_block, int64_t count, uint32_t* const lanes[4]) {
  TORCH_CHECK(host_runs_philox_path(path), "this host does not run Philox path ", static_cast<int>(path));
  const auto key0 = static_cast<uint32_t>(seed);
  const auto key1 = static_cast<uint32_t>(seed >> 32);
  if (!philox_blocks_in_vectors(path, key0, key1, first_block, count, lanes)) {
    philox_blocks_compiled(key0, key1, first_block, count, lanes);
  }
}

}  // namespace axon
