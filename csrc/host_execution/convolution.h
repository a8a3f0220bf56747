// Convolution on axon. PyTorch routes every convolution of an out-of-tree
// backend to the two "overrideable" operators below; they run ATen's CPU
// convolution (oneDNN / im2col paths) over aliases of axon memory.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <tuple>

namespace axon {

at::Tensor convolution_overrideable(const at::Tensor& input, const at::Tensor& weight,
                                    const std::optional<at::Tensor>& bias, c10::IntArrayRef stride,
                                    c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed,
                                    c10::IntArrayRef output_padding, int64_t groups);

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_overrideable(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, c10::IntArrayRef stride,
    c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed, c10::IntArrayRef output_padding,
    int64_t groups, std::array<bool, 3> output_mask);

}  // namespace axon
