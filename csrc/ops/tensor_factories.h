// empty / empty_strided: the two primitives every other factory builds on;
// and _efficientzerotensor, the storage-less zeros forward-mode AD uses.
#pragma once

#include <ATen/core/Tensor.h>

namespace axon {

// Whether new memory is filled, as torch.use_deterministic_algorithms asks
// (with torch.utils.deterministic.fill_uninitialized_memory, its default).
bool fills_uninitialized_memory();

// Fills `tensor` as the CPU's and CUDA's empty do in that mode: NaN for
// floating and complex dtypes, the largest value for integral ones and bool.
at::Tensor& fill_if_deterministic(at::Tensor& tensor);

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                               std::optional<bool> pin_memory, std::optional<c10::MemoryFormat> memory_format);

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<c10::ScalarType> dtype,
                         std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                         std::optional<bool> pin_memory);

at::Tensor efficient_zero_tensor(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                                 std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                                 std::optional<bool> pin_memory);

}  // namespace axon
