// The direct kernel of native_batch_norm (direct_kernels.h): a training call
// on contiguous float32 data of 3 or more dimensions, with float32 per-channel
// operands, runs axon's kernel (batch_norm_statistics.h), 3-4x faster than
// the CPU's; every other call goes to the generic kernel, which gives the
// CPU's results, warnings and errors.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace axon {

std::tuple<at::Tensor, at::Tensor, at::Tensor> direct_native_batch_norm(const at::Tensor& input,
                                                                        const std::optional<at::Tensor>& weight,
                                                                        const std::optional<at::Tensor>& bias,
                                                                        const std::optional<at::Tensor>& running_mean,
                                                                        const std::optional<at::Tensor>& running_var,
                                                                        bool training, double momentum, double eps);

}  // namespace axon
