// CPU tensors that alias axon memory, for kernels executing on the device.
//
// The emulated device computes with the host CPU: a kernel running on an axon
// stream wraps each axon tensor as a CPU tensor over the same bytes (through
// the driver's host view of device memory) and runs ATen's CPU kernel on
// them. Aliases never own memory; the axon tensors keep it alive (the
// caching allocator's stream ordering keeps it from being reused early).
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

namespace axon {

// CPU alias of an axon tensor (same sizes, strides, dtype, bytes). CPU
// tensors (e.g. wrapped scalars) are returned unchanged; undefined stays
// undefined.
at::Tensor host_alias(const at::Tensor& tensor);

// host_alias applied to every tensor inside an operator argument (tensor,
// tensor list, list of optional tensors, optional tensor).
c10::IValue host_alias_ivalue(const c10::IValue& value);

}  // namespace axon
