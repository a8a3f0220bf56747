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

#include <utility>
#include <vector>

namespace axon {

// Aliases for the arguments of one kernel call. Axon tensors sharing a
// storage get aliases sharing one CPU storage, and a tensor passed twice
// gets one alias, so ATen's overlap and identity checks (out= overlapping
// an input, out= being an input, in-place on an expanded view) see what
// they would see on the CPU.
class HostAliases {
 public:
  // CPU alias of an axon tensor (same sizes, strides, offset, dtype, bytes,
  // conj/neg flags). CPU tensors (e.g. wrapped scalars) are returned
  // unchanged; undefined stays undefined.
  at::Tensor alias(const at::Tensor& tensor);

  // alias() applied to every tensor inside an operator argument.
  c10::IValue alias(const c10::IValue& value);

 private:
  c10::Storage host_storage(const c10::Storage& device_storage);

  std::vector<std::pair<const c10::StorageImpl*, c10::Storage>> storages_;
  std::vector<std::pair<const c10::TensorImpl*, at::Tensor>> tensors_;
};

// One-off alias of a single axon tensor, for code other than kernel bodies
// (the collectives' transport). Unlike HostAliases, which only the kernels
// use, it raises NotImplementedError where the driver says the host cannot
// address the device's memory, so that no caller outside the kernels can
// depend on it silently (AXON_EMULATED_PRIVATE_MEMORY=1 tests this).
at::Tensor host_alias(const at::Tensor& tensor);

// Whether the driver says the host can address `device`'s memory
// (AXON_CAPABILITY_HOST_ADDRESSABLE_MEMORY). Code outside host_execution/
// that would alias device memory asks this first and otherwise copies.
bool host_addressable(c10::DeviceIndex device);

}  // namespace axon
