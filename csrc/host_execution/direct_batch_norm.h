// The direct kernels of batch norm's training calls (direct_kernels.h):
// native_batch_norm and _native_batch_norm_legit (with running statistics or
// without: the operator a compiled graph's batch norm calls) on float32 data
// of 3 or more dimensions, contiguous or channels-last, with float32
// per-channel operands, run axon's forward kernels
// (batch_norm_statistics.h); native_batch_norm_backward on channels-last
// float32 data runs axon's backward (batch_norm_gradients.h). Every other
// call goes to the generic kernel, which gives the CPU's results, warnings and
// errors.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <optional>
#include <tuple>

namespace axon {

std::tuple<at::Tensor, at::Tensor, at::Tensor> direct_native_batch_norm(const at::Tensor& input,
                                                                        const std::optional<at::Tensor>& weight,
                                                                        const std::optional<at::Tensor>& bias,
                                                                        const std::optional<at::Tensor>& running_mean,
                                                                        const std::optional<at::Tensor>& running_var,
                                                                        bool training, double momentum, double eps);

std::tuple<at::Tensor, at::Tensor, at::Tensor> direct_native_batch_norm_legit(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    at::Tensor& running_mean, at::Tensor& running_var, bool training, double momentum, double eps);

std::tuple<at::Tensor, at::Tensor, at::Tensor> direct_native_batch_norm_legit_no_stats(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    bool training, double momentum, double eps);

std::tuple<at::Tensor, at::Tensor, at::Tensor> direct_native_batch_norm_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    const std::optional<at::Tensor>& save_mean, const std::optional<at::Tensor>& save_invstd, bool training, double eps,
    std::array<bool, 3> output_mask);

}  // namespace axon
