// Visiting the tensors inside an operator argument (tensor, tensor list,
// list of optional tensors).
#pragma once

#include <ATen/core/ivalue.h>

namespace axon {

template <typename F>
void for_each_tensor(const c10::IValue& value, F&& visit) {
  if (value.isTensor()) {
    visit(value.toTensor());
  } else if (value.isTensorList()) {
    for (const at::Tensor& tensor : value.toTensorList()) visit(tensor);
  } else if (value.isOptionalTensorList()) {
    for (const std::optional<at::Tensor>& tensor : value.toOptionalTensorList()) {
      if (tensor.has_value()) visit(*tensor);
    }
  }
}

}  // namespace axon
