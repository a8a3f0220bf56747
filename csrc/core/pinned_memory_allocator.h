// The caching allocator for page-locked ("pinned") host memory.
//
// Backs Tensor.pin_memory() / pin_memory=True. Built on ATen's generic
// CachingHostAllocatorImpl: a pinned block used by an asynchronous copy is
// not handed out again until the copy's stream has passed it (an event is
// recorded through pinned_memory_record_use at copy time).
#pragma once

#include <ATen/core/CachingHostAllocator.h>

namespace axon {

at::HostAllocator* pinned_memory_allocator();

// Marks the pinned storage behind `data_ptr` as in use by `stream` until the
// work queued there so far completes. No-op for non-pinned memory.
void pinned_memory_record_use(const c10::DataPtr& data_ptr, const c10::Stream& stream);

}  // namespace axon
