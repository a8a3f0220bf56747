// The direct kernels of 2-D max and average pooling (direct_kernels.h): calls
// on contiguous float planes run axon's own kernels (pooling_planes.h), which
// equal the CPU's bit for bit and run several times faster; every other call
// goes to the generic kernel, and so do calls the CPU would refuse, which
// then raise its errors at the call.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <tuple>

namespace axon {

std::tuple<at::Tensor, at::Tensor> direct_max_pool2d_with_indices(const at::Tensor& input, at::IntArrayRef kernel_size,
                                                                  at::IntArrayRef stride, at::IntArrayRef padding,
                                                                  at::IntArrayRef dilation, bool ceil_mode);

at::Tensor direct_avg_pool2d(const at::Tensor& input, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                             at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                             std::optional<int64_t> divisor_override);

// The gradient of avg_pool2d where its windows do not overlap (2×2 windows
// 2 apart, and the like).
at::Tensor direct_avg_pool2d_backward(const at::Tensor& grad_output, const at::Tensor& input,
                                      at::IntArrayRef kernel_size, at::IntArrayRef stride, at::IntArrayRef padding,
                                      bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override);

}  // namespace axon
