// Checks of tensor values that the CPU makes at the call, reading the values
// back (a synchronization), where the generic kernel would leave them to the
// CPU kernel on the device's worker and report them at a later call. CUDA
// makes the first two at the call as well.
//
//  - normal with a tensor std: every element must be >= 0 (CUDA and the CPU
//    both check std.min() before drawing).
//  - histc with min == max: the range comes from the data, and must be finite
//    (CUDA reads the data's minimum and maximum at the call).
//  - masked_scatter_: the source must have an element for each true element
//    of the mask. CUDA checks this inside its kernel (a device assert); the
//    CPU at the call. Axon counts the mask's ones at the call, as the CPU
//    does, where the source could fall short, and raises the CPU's message.
//
// All then run through the generic kernel as before, and raise the CPU's
// own message.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

namespace axon {

at::Tensor normal_tensor_tensor(const at::Tensor& mean, const at::Tensor& std, std::optional<at::Generator> generator);
at::Tensor& normal_tensor_tensor_out(const at::Tensor& mean, const at::Tensor& std,
                                     std::optional<at::Generator> generator, at::Tensor& out);
at::Tensor normal_float_tensor(double mean, const at::Tensor& std, std::optional<at::Generator> generator);
at::Tensor& normal_float_tensor_out(double mean, const at::Tensor& std, std::optional<at::Generator> generator,
                                    at::Tensor& out);

at::Tensor& masked_scatter_(at::Tensor& self, const at::Tensor& mask, const at::Tensor& source);

// Raises the CPU's error for histc over data whose range is not finite, when
// the range comes from the data (min == max).
void check_histc_range(const at::Tensor& self, int64_t bins, const at::Scalar& min, const at::Scalar& max);

}  // namespace axon
