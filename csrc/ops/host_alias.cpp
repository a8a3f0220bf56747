#include "ops/host_alias.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/from_blob.h>

#include "core/check.h"
#include "ops/argument_tensors.h"

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
  return map_tensors(value, host_alias);
}

}  // namespace axon
