// Convolution on axon. PyTorch routes every convolution of an out-of-tree
// backend to the two "overrideable" operators below; they run ATen's CPU
// convolution (oneDNN / im2col paths) over aliases of axon memory.
#pragma once

#include <ATen/core/Tensor.h>

#include <c10/core/MemoryFormat.h>
#include <cstdint>

#include <array>
#include <tuple>

namespace axon {

// The layout the CPU's convolution kernels give their results for these
// arguments, which axon's convolution gives too: ATen's choice for the
// backend the CPU would run (oneDNN keeps channels-last, the slow 3-d
// transposed kernel does not, ...). Reads sizes, strides and dtypes only, so
// fake tensors may be passed (torch_axon/fake_tensors.py asks it so that
// traced graphs predict axon's layouts).
c10::MemoryFormat convolution_result_format(const at::Tensor& input, const at::Tensor& weight,
                                            const std::optional<at::Tensor>& bias, c10::IntArrayRef stride,
                                            c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed,
                                            c10::IntArrayRef output_padding, int64_t groups);

at::Tensor convolution_overrideable(const at::Tensor& input, const at::Tensor& weight,
                                    const std::optional<at::Tensor>& bias, c10::IntArrayRef stride,
                                    c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed,
                                    c10::IntArrayRef output_padding, int64_t groups);

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_overrideable(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, c10::IntArrayRef stride,
    c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed, c10::IntArrayRef output_padding,
    int64_t groups, std::array<bool, 3> output_mask);

// How many backward calls summed the bias's gradient apart from oneDNN's
// backward (channels-last float convolutions; convolution.cpp says why), for tests.
int64_t convolution_biases_summed_apart();

}  // namespace axon
