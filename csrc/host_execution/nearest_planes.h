// Nearest-neighbour upsampling (and downsampling) of contiguous (N)CHW
// planes: axon's own kernel behind the direct upsample_nearest2d and
// _upsample_nearest_exact2d (direct_upsampling.cpp).
//
// Why: the CPU's kernel for this layout computes every output element's
// source through a generic strided loop, about 1.6 GB/s of output on one
// thread (5.3 ms to double 8×64×32×32 floats). Here each output row is
// either a copy of the row above (consecutive output rows that read the same
// input row, half of them when doubling) or a gather from one input row
// through a column map, and doubling a row's width is a vector unpack.
//
// The result is the CPU's in every bit: elements are copied, never computed,
// and the row and column maps come from the functions the CPU's kernel calls
// (at::native::nearest_idx and nearest_exact_idx).
#pragma once

#include <cstdint>
#include <optional>

namespace axon {

// One resize: input planes of height × width to out_height × out_width, the
// scale factors the caller gave (which the CPU's index rule uses where
// given), and whether the rule is nearest-exact (pixel centres) or the
// legacy nearest (top-left corners).
struct NearestResize {
  int64_t height, width;
  int64_t out_height, out_width;
  std::optional<double> scale_h, scale_w;
  bool exact;
};

// Copies `planes` consecutive planes of `element_size`-byte elements (1, 2,
// 4 or 8) from `input` to `output`, resized, split among the calling
// thread's OpenMP team.
void nearest_planes(const void* input, void* output, int64_t planes, int64_t element_size, const NearestResize& resize);

// The gradient of that resize for float (or, where `is_double`, double)
// planes: each input element the sum, from +0, of the output gradients of
// the outputs that copied it, added in output order as the CPU's kernel
// adds them (its result, bit for bit).
void nearest_gradient_planes(const void* grad_output, void* grad_input, int64_t planes, bool is_double,
                             const NearestResize& resize);

}  // namespace axon
