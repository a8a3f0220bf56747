// Max and average pooling over contiguous (N)CHW float planes (bfloat16 too
// for max pooling): axon's own kernels behind the direct
// max_pool2d_with_indices, avg_pool2d and avg_pool2d_backward
// (direct_pooling.cpp).
//
// Why: the CPU's kernels for this layout compute one output at a time,
// scalar, and max pooling branches on every element; on random data the
// branches mispredict. Both run at 1-2.5 GB/s of input on one thread
// (max pooling 4.3 ms for 32×32×32×32 in 2×2 windows). Here eight
// consecutive outputs of a row take each window position ("tap") in turn as
// one vector: max pooling compares and blends where the CPU branches,
// average pooling adds (docs/benchmarks.md has the speed-ups).
//
// Each result equals the CPU kernel's in every bit, because each output
// still sees its taps in the CPU's order under the CPU's arithmetic:
// - max: a tap replaces the current maximum when larger or NaN (ties keep
//   the first tap, the last NaN wins), the index starts at the first tap
//   inside the input, taps in the padding are skipped;
// - average: a float sum from +0 in tap order, divided by the float value of
//   the divisor (the override, else the window's size with or without its
//   padding), added to +0 as the CPU's kernel adds it to the zeroed output.
#pragma once

#include <c10/util/BFloat16.h>

#include <cstdint>
#include <optional>

namespace axon {

// One 2-D pooling's shape: an input plane of height × width, an output plane
// of out_height × out_width (as the CPU's meta kernel computes it), and the
// window's kernel, stride, padding and dilation per axis (dilation 1 for
// average pooling).
struct PoolGeometry {
  int64_t height, width;
  int64_t out_height, out_width;
  int64_t kernel_h, kernel_w;
  int64_t stride_h, stride_w;
  int64_t pad_h, pad_w;
  int64_t dilation_h, dilation_w;
};

// Whether these kernels compute pools of this geometry: element offsets
// within a plane must fit 32-bit vector lanes.
bool pooling_planes_supported(const PoolGeometry& geometry);

// Max-pools `planes` consecutive input planes into `output` and `indices`
// (each index counts elements within its input plane, as the CPU's do).
// Splits the planes among the calling thread's OpenMP team.
void max_pool2d_planes(const float* input, float* output, int64_t* indices, int64_t planes,
                       const PoolGeometry& geometry);
// The same on bfloat16 planes, compared in float, as the CPU's kernel does.
void max_pool2d_planes(const c10::BFloat16* input, c10::BFloat16* output, int64_t* indices, int64_t planes,
                       const PoolGeometry& geometry);

// How average pooling divides a window's sum: by `divisor` where given, else
// by the window's size, counting the padding it covers or not.
struct AverageDivisor {
  bool count_include_pad;
  std::optional<int64_t> divisor;
};

// Average-pools `planes` consecutive input planes into `output`, as
// max_pool2d_planes does.
void avg_pool2d_planes(const float* input, float* output, int64_t planes, const PoolGeometry& geometry,
                       const AverageDivisor& divide);

// Whether avg_pool2d_gradient_planes has a faster kernel than the CPU's
// for this geometry: windows that do not overlap (stride at least the
// kernel on both axes), so each input element takes at most one share.
bool avg_pool2d_gradient_vectorized(const PoolGeometry& geometry);

// The gradient of average pooling over `planes` consecutive planes, as the
// CPU's kernel computes it (each output's gradient divided by its divisor,
// added from +0 to every element of its window, output by output).
void avg_pool2d_gradient_planes(const float* grad_output, float* grad_input, int64_t planes,
                                const PoolGeometry& geometry, const AverageDivisor& divide);

}  // namespace axon
