// Axon's kernel for cumulative sums of float32 and float64 data along one
// dimension (cumsum; direct_cumulative_sum.h decides which calls come here).
//
// Why a kernel of its own: the CPU's cumsum walks one line of the summed
// dimension at a time, an element per step, even where that dimension is not
// the innermost. Along a strided dimension every step then lands on another
// cache line, and its loads wait on its own stores whenever the input and the
// result sit a multiple of the stride apart modulo 4 KiB (4K aliasing): 25-30
// ms for 4096x1024 floats along dim 0, 0.65 ms for 32x64x256 along dim 1.
// Here a block of neighbouring lines is summed together, row by row of the
// block, and along the innermost dimension several lines go in step, so no
// sum waits on the one before it.
//
// The values are the CPU's bit for bit: the same running sum per line, in the
// same order, carried in double precision (at::acc_type<float, false> is
// double) and rounded to the result's dtype at every element.
#pragma once

#include <cstdint>

namespace axon {

// Contiguous data viewed as [outer, extent, inner], summed along `extent`.
struct ScanShape {
  int64_t outer = 1;
  int64_t extent = 1;
  int64_t inner = 1;
};

// Writes the cumulative sums of `data` along `extent` to `result` (the same
// shape, contiguous). Splits the work with at::parallel_for: call it on the
// device's worker.
void cumulative_sums(const float* data, const ScanShape& shape, float* result);
void cumulative_sums(const double* data, const ScanShape& shape, double* result);

}  // namespace axon
