// Copy-on-write storages (Tensor._lazy_clone) on axon.
//
// ATen shares one allocation between a tensor and its lazy clone, and gives
// each writer its own copy the first time it writes: a writer asks for the
// storage's mutable data, which "materializes" it (c10/core/impl/COW.h). On
// the CPU every kernel asks for mutable data before it writes. Axon's
// kernels run on a stream, over pointers taken when they are queued, so the
// host takes the written storages' copies before it queues the kernel:
// the copy is queued first on the same stream (the allocator's copy_data),
// and the kernel then writes the storage's new memory. Storages a kernel
// only reads stay shared.
//
// Every path that queues a write through a pointer of its own (rather than
// through Tensor.data_ptr / mutable_data_ptr, which materialize) calls
// materialize_for_write first: HostAliases and DeferredAliases
// (host_execution/device_memory_views.h) for the kernels over aliases.
#pragma once

#include <c10/core/Storage.h>
#include <c10/core/impl/COWDeleter.h>

namespace axon {

// Whether `storage` shares its memory with a lazy clone (or is one): ATen
// marks such memory with its copy-on-write deleter. Inline: the direct
// kernels ask it of every operand.
inline bool is_copy_on_write(const c10::DataPtr& data_ptr) {
  return data_ptr.get_deleter() == &c10::impl::cow::cow_deleter;
}
inline bool is_copy_on_write(const c10::Storage& storage) { return storage && is_copy_on_write(storage.data_ptr()); }

// materialize_for_write's copy, for a storage that is_copy_on_write.
void materialize_shared_storage(const c10::Storage& storage);

// Gives `storage` memory of its own if it shares it (a copy queued on the
// current stream of its device, or the shared memory itself when no other
// storage holds it any more); nothing otherwise. On a program thread only:
// never inside a running kernel, whose pointers were taken before. Inline,
// the check first: every operand a direct kernel queues passes here.
inline void materialize_for_write(const c10::Storage& storage) {
  if (C10_UNLIKELY(is_copy_on_write(storage))) materialize_shared_storage(storage);
}

}  // namespace axon
