#include "ops/tensor_storage.h"

#include <ATen/EmptyTensor.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/ResizeCommon.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/StorageImpl.h>

#include "core/device_allocator.h"
#include "ops/tensor_factories.h"

namespace axon {
namespace {

// Grows the storage if `self`'s current geometry needs more bytes.
void ensure_storage_fits(const at::Tensor& self) {
  if (self.numel() == 0) {
    return;
  }
  const size_t needed =
      at::detail::computeStorageNbytes(self.sizes(), self.strides(), self.element_size(), self.storage_offset());
  const c10::Storage& storage = self.storage();
  if (needed > storage.nbytes()) {
    at::detail::getPrivateUse1Hooks().resizePrivateUse1Bytes(storage, needed);
  }
}

}  // namespace

// As ATen's resize_: same sizes leave the tensor as it is (strides
// included); new sizes are laid out contiguously; a memory format, when
// given, restrides.
const at::Tensor& resize_(const at::Tensor& self, c10::SymIntArrayRef size,
                          std::optional<c10::MemoryFormat> memory_format) {
  auto* impl = self.unsafeGetTensorImpl();
  const auto sizes = C10_AS_INTARRAYREF_SLOW(size);
  for (const auto dimension : sizes) {
    TORCH_CHECK_VALUE(dimension >= 0, "Trying to create tensor with negative dimension ", dimension, ": ", sizes);
  }
  const int64_t old_bytes = self.has_storage() ? static_cast<int64_t>(self.storage().nbytes()) : 0;
  if (self.sizes() != sizes) impl->set_sizes_contiguous(sizes);
  if (memory_format.has_value()) {
    TORCH_CHECK(*memory_format != c10::MemoryFormat::Preserve, "Unsupported memory format", *memory_format);
    impl->empty_tensor_restride(*memory_format);
  }
  ensure_storage_fits(self);
  // As the CPU's resize_: the storage's new elements, not the old ones.
  if (C10_UNLIKELY(fills_uninitialized_memory())) at::native::fill_resize_deterministic_(self, old_bytes);
  return self;
}

at::Tensor& set_storage(at::Tensor& self, c10::Storage source, c10::SymInt storage_offset, c10::SymIntArrayRef size,
                        c10::SymIntArrayRef stride) {
  // The CPU's wording (checkSetStorage): a tensor never silently changes device.
  TORCH_CHECK(source.device() == self.device(), "Attempted to set the storage of a tensor on device \"", self.device(),
              "\" to a storage on different device \"", source.device(),
              "\".  This is no longer allowed; the devices must match.");
  auto* impl = self.unsafeGetTensorImpl();
  if (!self.storage().is_alias_of(source)) {
    impl->set_storage_keep_dtype(std::move(source));
  }
  const auto offset = storage_offset.expect_int();
  TORCH_CHECK_VALUE(offset >= 0, "[axon] set_: storage offset must be non-negative, got ", offset);
  impl->set_storage_offset(offset);
  const auto sizes = C10_AS_INTARRAYREF_SLOW(size);
  if (stride.empty()) {
    impl->set_sizes_contiguous(sizes);
  } else {
    impl->set_sizes_and_strides(sizes, C10_AS_INTARRAYREF_SLOW(stride));
  }
  ensure_storage_fits(self);
  return self;
}

at::Tensor& set_whole_storage(at::Tensor& self, c10::Storage source) {
  const int64_t elements = static_cast<int64_t>(source.nbytes() / self.element_size());
  const std::vector<c10::SymInt> size{c10::SymInt(elements)};
  return set_storage(self, std::move(source), 0, size, {});
}

at::Tensor& set_tensor(at::Tensor& self, const at::Tensor& source) {
  TORCH_CHECK_TYPE(self.dtype() == source.dtype(), "[axon] set_: expected source of dtype ", self.dtype(), ", got ",
                   source.dtype());
  if (self.is_same(source)) {
    return self;
  }
  return set_storage(self, source.storage(), source.sym_storage_offset(), source.sym_sizes(), source.sym_strides());
}

at::Tensor& set_empty(at::Tensor& self) {
  const c10::DeviceGuard guard(self.device());
  c10::Storage empty(c10::Storage::use_byte_size_t(), 0, device_allocator(), /*resizable=*/true);
  const std::vector<c10::SymInt> size{c10::SymInt(0)};
  return set_storage(self, std::move(empty), 0, size, {});
}

bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  // c10's own rule lists the dense backends that may exchange TensorImpl
  // contents (CPU, CUDA, ...) but not PrivateUse1; axon tensors are plain
  // strided TensorImpls like theirs, so they join that list.
  const auto dense = [](c10::DispatchKeySet keys) {
    constexpr auto backends = c10::DispatchKeySet(
        {c10::BackendComponent::CPUBit, c10::BackendComponent::CUDABit, c10::BackendComponent::MPSBit,
         c10::BackendComponent::HIPBit, c10::BackendComponent::XPUBit, c10::BackendComponent::HPUBit,
         c10::BackendComponent::MTIABit, c10::BackendComponent::PrivateUse1Bit});
    return keys.has(c10::DispatchKey::Dense) && keys.has_any(backends);
  };
  const c10::DispatchKeySet from_keys = from.key_set();
  return self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from_keys) ||
         (dense(self.key_set()) && dense(from_keys));
}

void record_stream(at::Tensor& self, c10::Stream stream) {
  TORCH_CHECK_VALUE(stream.device_type() == c10::DeviceType::PrivateUse1,
                    "[axon] record_stream expects an axon stream, got a stream of ", stream.device());
  device_allocator_record_stream(self.storage().data_ptr(), stream);
}

}  // namespace axon
