// Copies into, out of and between axon tensors (Tensor.copy_, .to(), ...).
#pragma once

#include <ATen/core/Tensor.h>

namespace axon {

// Copies `self` into `dst` (at least one of them on axon) and returns dst.
at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking);
at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst);

// Tensor.item() and friends: waits for the stream, then reads one element.
c10::Scalar local_scalar_dense(const at::Tensor& self);

}  // namespace axon
