// The direct kernels of var, std, var_mean and std_mean (direct_kernels.h):
// a float32 contiguous tensor reduced along one dimension whose divisor
// (size minus correction) is positive runs axon's kernel (variance_rows.h),
// equal to the CPU's within the last bit of a float and many times faster;
// every other call goes to the generic kernel, which gives the CPU's results,
// warnings and errors.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace axon {

at::Tensor direct_var(const at::Tensor& self, at::OptionalIntArrayRef dim, const std::optional<at::Scalar>& correction,
                      bool keepdim);

at::Tensor direct_std(const at::Tensor& self, at::OptionalIntArrayRef dim, const std::optional<at::Scalar>& correction,
                      bool keepdim);

std::tuple<at::Tensor, at::Tensor> direct_var_mean(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                                   const std::optional<at::Scalar>& correction, bool keepdim);

std::tuple<at::Tensor, at::Tensor> direct_std_mean(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                                   const std::optional<at::Scalar>& correction, bool keepdim);

}  // namespace axon
