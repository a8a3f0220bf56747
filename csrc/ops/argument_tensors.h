// Visiting and mapping the tensors inside an operator argument (tensor,
// tensor list, list of optional tensors); other values pass through.
//
// A list of optional tensors is not always typed as one: TorchScript builds
// `Tensor?[]` arguments (`x[mask] = 1.0` calls index_put_ with one) as lists
// whose element type is its own Optional[Tensor] object, which
// isOptionalTensorList(), comparing type pointers, does not recognize. The
// dispatcher finds the tensors in any list, so these helpers look into every
// list whose elements are tensors or None.
#pragma once

#include <ATen/core/ivalue.h>

#include <optional>
#include <vector>

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
  } else if (value.isList()) {
    for (const c10::IValue& element : value.toListRef()) {
      if (element.isTensor()) visit(element.toTensor());
    }
  }
}

// Whether `value` is a list of tensors and Nones, with a tensor, that the
// typed checks above do not recognize.
inline bool is_untyped_optional_tensor_list(const c10::IValue& value) {
  if (!value.isList() || value.isTensorList() || value.isOptionalTensorList()) return false;
  bool any_tensor = false;
  for (const c10::IValue& element : value.toListRef()) {
    if (element.isTensor()) {
      any_tensor = true;
    } else if (!element.isNone()) {
      return false;
    }
  }
  return any_tensor;
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
  if (is_untyped_optional_tensor_list(value)) {
    c10::List<std::optional<at::Tensor>> mapped;  // typed as the schema's Tensor?[] from here on
    for (const c10::IValue& element : value.toListRef()) {
      mapped.push_back(element.isTensor() ? std::optional<at::Tensor>(map(element.toTensor())) : std::nullopt);
    }
    return mapped;
  }
  return value;
}

// Types `value`, if it is a list of tensors and Nones, as
// c10::List<std::optional<at::Tensor>>, so code that asks
// isOptionalTensorList() (host aliases, cache keys) sees it as one.
inline void type_optional_tensor_list(c10::IValue& value) {
  if (is_untyped_optional_tensor_list(value)) value = map_tensors(value, [](const at::Tensor& t) { return t; });
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
