#include "host_execution/device_memory_views.h"

#include <c10/core/StorageImpl.h>
#include <c10/core/TensorImpl.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <utility>

#include "axon/runtime.h"
#include "core/check.h"
#include "core/copy_on_write.h"
#include "core/device.h"
#include "core/device_allocator.h"
#include "core/pinned_memory_allocator.h"
#include "host_execution/stream_launch.h"
#include "ops/argument_tensors.h"

namespace axon {
namespace {

// The bytes [begin, end) of its storage that `tensor`'s elements occupy.
std::pair<std::size_t, std::size_t> byte_extent(const at::Tensor& tensor) {
  if (tensor.numel() == 0) return {0, 0};
  int64_t lowest = tensor.storage_offset();
  int64_t highest = tensor.storage_offset();
  // The arrays, not size(dim) and stride(dim), which wrap and check each index.
  const c10::IntArrayRef sizes = tensor.sizes();
  const c10::IntArrayRef strides = tensor.strides();
  for (std::size_t dim = 0; dim < sizes.size(); ++dim) {
    const int64_t reach = (sizes[dim] - 1) * strides[dim];
    (reach < 0 ? lowest : highest) += reach;
  }
  const auto item = static_cast<int64_t>(tensor.element_size());
  const auto storage_bytes = static_cast<int64_t>(tensor.storage().nbytes());
  return {static_cast<std::size_t>(std::clamp<int64_t>(lowest * item, 0, storage_bytes)),
          static_cast<std::size_t>(std::clamp<int64_t>((highest + 1) * item, 0, storage_bytes))};
}

void widen(std::size_t& begin, std::size_t& end, std::pair<std::size_t, std::size_t> extent) {
  if (extent.first >= extent.second) return;
  if (begin >= end) {
    begin = extent.first;
    end = extent.second;
    return;
  }
  begin = std::min(begin, extent.first);
  end = std::max(end, extent.second);
}

// A tensor over `storage` (dispatched as `key`) that sees its bytes as
// `like` sees its own: sizes, strides, offset, dtype, and the lazy
// conjugation / negation flags, which live on the tensor, not in the bytes.
at::Tensor view_over(const c10::Storage& storage, c10::DispatchKey key, caffe2::TypeMeta dtype, c10::IntArrayRef sizes,
                     c10::IntArrayRef strides, int64_t offset, bool conj, bool neg) {
  auto impl = c10::make_intrusive<c10::TensorImpl>(c10::Storage(storage), c10::DispatchKeySet(key), dtype);
  impl->set_sizes_and_strides(sizes, strides, offset);
  at::Tensor tensor(std::move(impl));
  tensor._set_conj(conj);
  tensor._set_neg(neg);
  return tensor;
}

at::Tensor viewed_like(const at::Tensor& like, const c10::Storage& storage, c10::DispatchKey key) {
  return view_over(storage, key, like.dtype(), like.sizes(), like.strides(), like.storage_offset(), like.is_conj(),
                   like.is_neg());
}

// A CPU storage over `bytes` host bytes at `data`, owning nothing.
c10::Storage host_storage_over(void* data, std::size_t bytes) {
  return c10::Storage(c10::Storage::use_byte_size_t(), bytes, c10::DataPtr(data, c10::Device(c10::kCPU)),
                      /*allocator=*/nullptr, /*resizable=*/false);
}

}  // namespace

HostAliases::StorageView& HostAliases::view_of(const at::Tensor& tensor) {
  const c10::Storage& device_storage = tensor.storage();
  const c10::StorageImpl* key = device_storage.unsafeGetStorageImpl();
  const void* bytes = device_storage.data();
  for (StorageView& view : storages_) {
    // A view made before its storage got memory of its own (copy-on-write) is not this one.
    if (view.device_storage.unsafeGetStorageImpl() == key && view.device_bytes == bytes) return view;
  }
  StorageView view;
  view.device_storage = device_storage;
  view.device_bytes = static_cast<char*>(const_cast<void*>(device_storage.data()));
  void* host_data = nullptr;
  if (view.device_bytes != nullptr && device_storage.nbytes() > 0) {
    if (host_addressable(tensor.device().index())) {
      host_data = host_bytes_for_kernel(view.device_bytes, device_allocator_host_view(device_storage.data_ptr()));
    } else {
      view.staging = pinned_memory_allocator()->allocate(device_storage.nbytes());
      host_data = view.staging.get();
    }
  }
  view.host_storage = host_storage_over(host_data, device_storage.nbytes());
  storages_.push_back(std::move(view));
  return storages_.back();
}

at::Tensor HostAliases::alias(const at::Tensor& tensor, Access access) {
  if (!tensor.defined() || !tensor.is_privateuseone()) {
    return tensor;
  }
  if (access != Access::read) materialize_for_write(tensor.storage());
  StorageView& view = view_of(tensor);
  const auto extent = byte_extent(tensor);
  // The range written back is one interval: its bytes must all be staged in,
  // except where one dense tensor overwrites every one of them.
  const bool fully_overwritten = access == Access::overwrite && tensor.is_non_overlapping_and_dense();
  if (!fully_overwritten) widen(view.read_begin, view.read_end, extent);
  if (access != Access::read) {
    widen(view.write_begin, view.write_end, extent);
    if (++view.writers > 1) widen(view.read_begin, view.read_end, {view.write_begin, view.write_end});
  }
  // Matched by memory too, as view_of matches: aliases made earlier in this
  // call over memory a write has since copied (copy-on-write) keep the
  // shared bytes, as a CPU kernel's pointers read before the write would.
  for (const TensorAlias& made : tensors_) {
    if (made.device == tensor.unsafeGetTensorImpl() && made.device_bytes == view.device_bytes) return made.alias;
  }
  at::Tensor alias = viewed_like(tensor, view.host_storage, c10::DispatchKey::CPU);
  tensors_.push_back({tensor.unsafeGetTensorImpl(), view.device_bytes, alias});
  return alias;
}

c10::IValue HostAliases::alias(const c10::IValue& value, Access access) {
  if (value.isDevice()) return retarget_device(value, c10::kCPU);
  return map_tensors(value, [this, access](const at::Tensor& tensor) { return alias(tensor, access); });
}

at::Tensor HostAliases::device_view(const at::Tensor& host) const {
  if (!host.defined() || !host.has_storage()) return at::Tensor();
  for (const StorageView& view : storages_) {
    if (!host.storage().is_alias_of(view.host_storage)) continue;
    return viewed_like(host, view.device_storage, c10::DispatchKey::PrivateUse1);
  }
  return at::Tensor();
}

bool HostAliases::staged() const {
  return std::any_of(storages_.begin(), storages_.end(), [](const StorageView& view) { return bool(view.staging); });
}

std::size_t HostAliases::bytes_covered() const {
  std::size_t bytes = 0;
  for (const StorageView& view : storages_) {
    // The span of the storage's read and written ranges, empty ones left out.
    std::size_t begin = std::numeric_limits<std::size_t>::max();
    std::size_t end = 0;
    for (const auto& [first, last] :
         {std::pair(view.read_begin, view.read_end), std::pair(view.write_begin, view.write_end)}) {
      if (first >= last) continue;
      begin = std::min(begin, first);
      end = std::max(end, last);
    }
    if (begin < end) bytes += end - begin;
  }
  return bytes;
}

void HostAliases::stage_in(axon_stream stream) {
  for (const StorageView& view : storages_) {
    if (!view.staging || view.read_begin >= view.read_end) continue;
    AXON_CHECK(axon_memory_copy_async(static_cast<char*>(view.staging.get()) + view.read_begin,
                                      view.device_bytes + view.read_begin, view.read_end - view.read_begin, stream),
               "staging device memory for a host kernel");
  }
}

void HostAliases::stage_out(axon_stream stream) {
  auto buffers = std::make_shared<std::vector<c10::DataPtr>>();
  for (StorageView& view : storages_) {
    if (!view.staging) continue;
    if (view.write_begin < view.write_end) {
      // The source is pinned: the driver reads it when the stream gets here, after the kernel.
      AXON_CHECK(axon_memory_copy_async(view.device_bytes + view.write_begin,
                                        static_cast<char*>(view.staging.get()) + view.write_begin,
                                        view.write_end - view.write_begin, stream),
                 "writing a host kernel's results to device memory");
    }
    buffers->push_back(std::move(view.staging));
  }
  if (buffers->empty()) return;
  // Released in stream order: by then the copies above have read the staging bytes.
  launch_on_stream(stream, "releasing host staging buffers", [buffers]() mutable { buffers->clear(); });
}

std::size_t DeferredAliases::add(const at::Tensor& tensor, Access access) {
  const c10::Storage& device_storage = tensor.storage();
  if (access != Access::read) materialize_for_write(device_storage);
  // Matched by identity and by memory: a storage given memory of its own for
  // a write (copy-on-write) is a new one here; earlier aliases keep the old.
  const c10::StorageImpl* key = device_storage.unsafeGetStorageImpl();
  const void* bytes = device_storage.data();
  const c10::TensorImpl* impl = tensor.unsafeGetTensorImpl();
  for (std::size_t i = 0; i < views_.size(); ++i) {
    if (views_[i].device == impl && storages_[views_[i].storage].device_bytes == bytes) return i;
  }
  std::size_t storage = 0;
  while (storage < storages_.size() && (storages_[storage].device != key || storages_[storage].device_bytes != bytes)) {
    ++storage;
  }
  if (storage == storages_.size()) {
    Storage added;
    added.device = device_storage.unsafeGetStorageImpl();
    added.nbytes = device_storage.nbytes();
    added.device_bytes = const_cast<void*>(device_storage.data());
    added.host_bytes = device_allocator_host_view(device_storage.data_ptr());
    storages_.push_back(added);
  }
  Storage& covered = storages_[storage];
  widen(covered.begin, covered.end, byte_extent(tensor));
  element_bytes_ += static_cast<std::size_t>(tensor.numel()) * tensor.dtype().itemsize();
  View view;
  view.device = impl;
  view.storage = storage;
  view.dims_at = dims_.size();
  view.dim = static_cast<std::size_t>(tensor.dim());
  dims_.append(tensor.sizes().begin(), tensor.sizes().end());
  dims_.append(tensor.strides().begin(), tensor.strides().end());
  view.offset = tensor.storage_offset();
  view.dtype = tensor.dtype();
  view.conj = tensor.is_conj();
  view.neg = tensor.is_neg();
  views_.push_back(std::move(view));
  return views_.size() - 1;
}

std::size_t DeferredAliases::bytes_covered() const {
  std::size_t bytes = 0;
  for (const Storage& storage : storages_) bytes += storage.end - storage.begin;
  return bytes;
}

std::size_t DeferredAliases::bytes_visited() const { return std::max(bytes_covered(), element_bytes_); }

c10::SmallVector<at::Tensor, 4> DeferredAliases::make() const {
  c10::SmallVector<c10::Storage, 4> storages;
  for (const Storage& storage : storages_) {
    // The allocator's view where it has one; otherwise mapped here, not at
    // add(): the driver's lookup is a tenth of a tiny operator's time on the
    // dispatching thread. Either way the memory stays allocated until the
    // stream passes this kernel (the caching allocator synchronizes before it
    // returns memory to the driver).
    void* host = nullptr;
    if (storage.device_bytes != nullptr && storage.nbytes > 0) {
      host = host_bytes_for_kernel(storage.device_bytes, storage.host_bytes);
    }
    storages.push_back(host_storage_over(host, storage.nbytes));
  }
  c10::SmallVector<at::Tensor, 4> aliases;
  for (const View& view : views_) {
    const c10::IntArrayRef sizes(dims_.data() + view.dims_at, view.dim);
    const c10::IntArrayRef strides(dims_.data() + view.dims_at + view.dim, view.dim);
    aliases.push_back(view_over(storages[view.storage], c10::DispatchKey::CPU, view.dtype, sizes, strides, view.offset,
                                view.conj, view.neg));
  }
  return aliases;
}

void* host_bytes_for_kernel(void* device_bytes, void* known) {
  if (known != nullptr) return known;
  void* host = nullptr;
  AXON_CHECK(axon_memory_host_view(device_bytes, &host), "mapping device memory for a kernel");
  return host;
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
