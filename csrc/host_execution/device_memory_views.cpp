#include "host_execution/device_memory_views.h"

#include <c10/core/StorageImpl.h>
#include <c10/core/TensorImpl.h>

#include "axon/runtime.h"
#include "core/check.h"
#include "core/device.h"
#include "ops/argument_tensors.h"

namespace axon {

c10::Storage HostAliases::host_storage(const c10::Storage& device_storage) {
  const c10::StorageImpl* key = device_storage.unsafeGetStorageImpl();
  for (const auto& [impl, storage] : storages_) {
    if (impl == key) return storage;
  }
  void* host_data = nullptr;
  if (device_storage.data() != nullptr) {
    AXON_CHECK(axon_memory_host_view(device_storage.data(), &host_data), "mapping device memory for a kernel");
  }
  c10::Storage storage(c10::Storage::use_byte_size_t(), device_storage.nbytes(),
                       c10::DataPtr(host_data, c10::Device(c10::kCPU)), /*allocator=*/nullptr,
                       /*resizable=*/false);
  storages_.emplace_back(key, storage);
  return storage;
}

at::Tensor HostAliases::alias(const at::Tensor& tensor) {
  if (!tensor.defined() || !tensor.is_privateuseone()) {
    return tensor;
  }
  for (const auto& [key, alias] : tensors_) {
    if (key == tensor.unsafeGetTensorImpl()) return alias;
  }
  auto impl = c10::make_intrusive<c10::TensorImpl>(host_storage(tensor.storage()),
                                                   c10::DispatchKeySet(c10::DispatchKey::CPU), tensor.dtype());
  impl->set_sizes_and_strides(tensor.sizes(), tensor.strides(), tensor.storage_offset());
  at::Tensor alias(std::move(impl));
  // Lazy conjugation / negation are flags on the tensor, not in the bytes.
  alias._set_conj(tensor.is_conj());
  alias._set_neg(tensor.is_neg());
  tensors_.emplace_back(tensor.unsafeGetTensorImpl(), alias);
  return alias;
}

c10::IValue HostAliases::alias(const c10::IValue& value) {
  if (value.isDevice()) return retarget_device(value, c10::kCPU);
  return map_tensors(value, [this](const at::Tensor& tensor) { return alias(tensor); });
}

bool host_addressable(c10::DeviceIndex device) {
  return driver_capability(device, AXON_CAPABILITY_HOST_ADDRESSABLE_MEMORY);
}

at::Tensor host_alias(const at::Tensor& tensor) {
  if (tensor.defined() && tensor.is_privateuseone()) {
    TORCH_CHECK_NOT_IMPLEMENTED(host_addressable(tensor.device().index()), "[axon] the memory of ", tensor.device(),
                                " is not host-addressable (driver \"", axon_driver_name(),
                                "\"): only kernel bodies may view it; copy it to the host instead");
  }
  HostAliases aliases;
  return aliases.alias(tensor);
}

}  // namespace axon
