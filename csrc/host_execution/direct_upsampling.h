// The direct kernels of 2-D nearest-neighbour resizing (direct_kernels.h):
// calls on contiguous NCHW planes of the dtypes the CPU's kernel takes run
// axon's own kernel (nearest_planes.h), which copies exactly the elements
// the CPU's copies and runs several times faster; every other call goes to
// the generic kernel, which raises the CPU's errors at the call.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

namespace axon {

at::Tensor direct_upsample_nearest2d(const at::Tensor& input, at::IntArrayRef output_size,
                                     std::optional<double> scales_h, std::optional<double> scales_w);

at::Tensor direct_upsample_nearest_exact2d(const at::Tensor& input, at::IntArrayRef output_size,
                                           std::optional<double> scales_h, std::optional<double> scales_w);

// The gradients of both, on contiguous float and double planes (the CPU's
// own order of additions; its result bit for bit).
at::Tensor direct_upsample_nearest2d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
                                              at::IntArrayRef input_size, std::optional<double> scales_h,
                                              std::optional<double> scales_w);

at::Tensor direct_upsample_nearest_exact2d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
                                                    at::IntArrayRef input_size, std::optional<double> scales_h,
                                                    std::optional<double> scales_w);

}  // namespace axon
