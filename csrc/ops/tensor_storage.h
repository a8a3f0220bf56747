// Operators that change a tensor's storage or its metadata over it:
// resize_, set_, and record_stream.
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

}  // namespace axon
