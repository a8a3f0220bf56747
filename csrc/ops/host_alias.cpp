#include "ops/host_alias.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/from_blob.h>

#include "core/check.h"

namespace axon {

at::Tensor host_alias(const at::Tensor& tensor) {
  if (!tensor.defined() || !tensor.is_privateuseone()) {
    return tensor;
  }
  const auto options = tensor.options().device(c10::kCPU).requires_grad(false);
  const void* device_data = tensor.storage().data();
  if (device_data == nullptr || tensor.numel() == 0) {
    return at::empty_strided(tensor.sizes(), tensor.strides(), options);
  }
  void* host_data = nullptr;
  AXON_CHECK(axon_memory_host_view(device_data, &host_data), "mapping device memory for a kernel");
  char* first_element = static_cast<char*>(host_data) + tensor.storage_offset() * tensor.element_size();
  at::Tensor alias = at::from_blob(first_element, tensor.sizes(), tensor.strides(), options);
  // Lazy conjugation / negation are flags on the tensor, not in the bytes.
  alias._set_conj(tensor.is_conj());
  alias._set_neg(tensor.is_neg());
  return alias;
}

c10::IValue host_alias_ivalue(const c10::IValue& value) {
  if (value.isTensor()) {
    return host_alias(value.toTensor());
  }
  if (value.isTensorList()) {
    auto list = value.toTensorList();
    c10::List<at::Tensor> aliases;
    aliases.reserve(list.size());
    for (const at::Tensor& tensor : list) {
      aliases.push_back(host_alias(tensor));
    }
    return aliases;
  }
  if (value.isOptionalTensorList()) {
    auto list = value.toOptionalTensorList();
    c10::List<std::optional<at::Tensor>> aliases;
    aliases.reserve(list.size());
    for (const std::optional<at::Tensor>& tensor : list) {
      aliases.push_back(tensor.has_value() ? std::optional<at::Tensor>(host_alias(*tensor)) : std::nullopt);
    }
    return aliases;
  }
  return value;
}

}  // namespace axon
