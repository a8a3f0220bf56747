// Visiting and mapping the tensors inside an operator argument (tensor,
// tensor list, list of optional tensors); other values pass through.
#pragma once

#include <ATen/core/ivalue.h>

#include <optional>

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

// The argument with every tensor t inside it replaced by map(t).
template <typename F>
c10::IValue map_tensors(const c10::IValue& value, F&& map) {
  if (value.isTensor()) {
    return map(value.toTensor());
  }
  if (value.isTensorList()) {
    c10::List<at::Tensor> mapped;
    for (const at::Tensor& tensor : value.toTensorList()) mapped.push_back(map(tensor));
    return mapped;
  }
  if (value.isOptionalTensorList()) {
    c10::List<std::optional<at::Tensor>> mapped;
    for (const std::optional<at::Tensor>& tensor : value.toOptionalTensorList()) {
      mapped.push_back(tensor.has_value() ? std::optional<at::Tensor>(map(*tensor)) : std::nullopt);
    }
    return mapped;
  }
  return value;
}

// An axon device argument (factories: `device=`) retargeted to `type`, so the
// meta and CPU runs of a factory do not dispatch back to axon. Other values
// pass through.
inline c10::IValue retarget_device(const c10::IValue& value, c10::DeviceType type) {
  if (value.isDevice() && value.toDevice().type() == c10::DeviceType::PrivateUse1) {
    return c10::Device(type);
  }
  return value;
}

}  // namespace axon
