// Operators that change a tensor's storage or its metadata over it:
// resize_, set_, record_stream, and whether `param.data = tensor` may move a
// tensor between the CPU and axon in place.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Stream.h>

namespace axon {

const at::Tensor& resize_(const at::Tensor& self, c10::SymIntArrayRef size,
                          std::optional<c10::MemoryFormat> memory_format);

at::Tensor& set_storage(at::Tensor& self, c10::Storage source, c10::SymInt storage_offset, c10::SymIntArrayRef size,
                        c10::SymIntArrayRef stride);
at::Tensor& set_whole_storage(at::Tensor& self, c10::Storage source);
at::Tensor& set_tensor(at::Tensor& self, const at::Tensor& source);
at::Tensor& set_empty(at::Tensor& self);

void record_stream(at::Tensor& self, c10::Stream stream);

// aten::_has_compatible_shallow_copy_type: true between dense strided tensors
// of CPU, CUDA-like backends and axon. nn.Module._apply keeps Parameter
// objects (and so ties between them) only when this holds, and
// `tensor.data = other` requires it.
bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from);

}  // namespace axon
