// The results of PyTorch's meta kernels for convolution and its backward, as
// meta tensors, computed in C++ (convolution.cpp sizes its results by them).
//
// Why: both meta kernels are Python (torch._meta_registrations). The
// forward's checks go through torch._check, which imports sympy the first
// time: a process's first convolution on axon took 230 ms more than on the
// CPU, which runs no meta kernel. And every new call shape (a batch of
// another size) paid tens of microseconds of Python on the calling thread.
//
// Each function mirrors its Python kernel: the same sizes, the same strides
// (the forward's result contiguous, the backward's gradients in
// channels-last order where the input or the weight suggests it). A call the
// forward's kernel would refuse, or whose arguments are not in the plain form
// read here, gets nullopt, and the caller runs the meta kernel itself, which
// raises its error.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <optional>
#include <vector>

namespace axon {

// One value per spatial axis: a single value stands for every axis; nullopt
// for another count.
std::optional<std::vector<int64_t>> per_axis(c10::IntArrayRef values, int64_t axes);

std::optional<at::Tensor> convolution_meta_result(const at::Tensor& input, const at::Tensor& weight,
                                                  c10::IntArrayRef stride, c10::IntArrayRef padding,
                                                  c10::IntArrayRef dilation, bool transposed,
                                                  c10::IntArrayRef output_padding, int64_t groups);

// Undefined tensors where `output_mask` asks for no gradient.
std::array<at::Tensor, 3> convolution_backward_meta_results(const at::Tensor& grad_output, const at::Tensor& input,
                                                            const at::Tensor& weight, c10::IntArrayRef bias_sizes,
                                                            std::array<bool, 3> output_mask);

}  // namespace axon
