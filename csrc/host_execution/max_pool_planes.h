// Max pooling with indices over contiguous (N)CHW float planes, axon's own
// kernel for the direct max_pool2d_with_indices (direct_kernels.h).
//
// Why: the CPU's kernel for this layout scans each window with a branch per
// element, scalar, one output at a time; on random data the branches
// mispredict, and it runs at under 1 GB/s of input (4.3 ms for 32×32×32×32,
// 2×2 windows, one thread). Here a vector of consecutive outputs of one row
// takes each window position ("tap") in turn, with compares and blends in
// place of branches: 8–10× faster on AVX2 (docs/benchmarks.md).
//
// The result equals the CPU kernel's in every bit, indices included, because
// each output still sees its taps in the CPU's order under the CPU's rule: a
// tap replaces the current maximum when it is larger or NaN (so ties keep the
// first tap, and the last NaN wins), the index starts at the first tap inside
// the input, and taps in the padding are skipped.
#pragma once

#include <cstdint>

namespace axon {

// One 2-D pooling's shape: an input plane of height × width, an output plane
// of out_height × out_width (as the CPU's meta kernel computes it), and the
// window's kernel, stride, padding and dilation per axis.
struct MaxPoolGeometry {
  int64_t height, width;
  int64_t out_height, out_width;
  int64_t kernel_h, kernel_w;
  int64_t stride_h, stride_w;
  int64_t pad_h, pad_w;
  int64_t dilation_h, dilation_w;
};

// Whether max_pool2d_planes computes pools of this geometry: indices within
// a plane must fit 32-bit vector lanes.
bool max_pool_planes_supported(const MaxPoolGeometry& geometry);

// Pools `planes` consecutive input planes into `output` and `indices` (each
// index counts elements within its input plane, as the CPU's do). Splits the
// planes among the calling thread's OpenMP team.
void max_pool2d_planes(const float* input, float* output, int64_t* indices, int64_t planes,
                       const MaxPoolGeometry& geometry);

}  // namespace axon
