// Memory: device allocations, page-locked ("pinned") host memory, copies.
//
// Device memory belongs to one device and counts against its capacity
// (axon_device_properties.total_memory). Device pointers are opaque to host
// code: only the driver (copies) and tasks running on a stream may touch the
// bytes, through axon_memory_host_view(). The driver identifies the memory
// kind of any pointer itself, so copy calls take no direction argument.
//
// Thread-safety: every call is thread-safe.
#pragma once

#include <stddef.h>

#include "axon/status.h"
#include "axon/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- device memory --------------------------------------------------------

// Reserves `bytes` (> 0) of device memory, aligned to at least 256 bytes.
// Fails with AXON_ERROR_OUT_OF_MEMORY, leaving *ptr untouched, when the
// capacity would be exceeded; the detail then states requested, in-use and
// capacity bytes. The memory content is unspecified.
axon_status axon_memory_allocate(int device, size_t bytes, void** ptr);

// Releases an allocation by its base address (interior pointers are refused).
// The caller guarantees no pending task still uses it (the caching allocator
// above synchronizes before returning memory). Freeing null is a no-op.
// After shutdown, frees succeed without doing anything.
axon_status axon_memory_free(void* ptr);

// Device that owns `ptr` (any address inside a live allocation), or
// AXON_ERROR_INVALID_POINTER if `ptr` is not device memory.
axon_status axon_memory_pointer_device(const void* ptr, int* device);

// Bytes currently allocated on the device through axon_memory_allocate, each
// allocation counted at its reserved size (the request rounded up to the
// driver's allocation granule, 256 bytes in the emulated driver).
axon_status axon_memory_used(int device, size_t* bytes);

// Host-accessible alias of device memory, for tasks executing on a stream.
// Optional slot: an emulated driver returns an address the host may
// dereference (identical to `ptr` unless memory protection is on); a real
// chip's driver returns AXON_ERROR_NOT_SUPPORTED, as its kernels run on the
// device itself.
axon_status axon_memory_host_view(const void* ptr, void** host_ptr);

// ---- pinned host memory ---------------------------------------------------

// Page-locked host memory: host code may use it freely, and asynchronous
// copies to or from it do not stage through a bounce buffer.
// axon_host_free takes the base address; freeing null is a no-op, and after
// shutdown frees succeed without doing anything.
axon_status axon_host_allocate(size_t bytes, void** ptr);
axon_status axon_host_free(void* ptr);

// *pinned = 1 if `ptr` lies inside a live pinned allocation, else 0.
axon_status axon_host_pointer_is_pinned(const void* ptr, int* pinned);

// ---- copies ---------------------------------------------------------------

// Copies `bytes` between any two of: device memory (any device), pinned host
// memory, pageable host memory. The copy is queued on `stream`, in order with
// its other work, and the call returns at once. Two rules follow CUDA:
// - a copy FROM pageable host memory stages the source before returning, so
//   the caller may reuse its buffer immediately;
// - a copy TO host memory (pinned or pageable) is complete only once the
//   stream has reached it: synchronize before reading the destination.
// A range in device or pinned memory must lie inside one live allocation
// (AXON_ERROR_INVALID_VALUE otherwise). `bytes` == 0 only validates `stream`.
axon_status axon_memory_copy_async(void* dst, const void* src, size_t bytes, axon_stream stream);

// axon_memory_copy_async followed by waiting for it (and everything queued
// before it on `stream`) to finish. Like axon_stream_synchronize, it returns
// (once) the stream's pending task failure, after the copy has completed.
axon_status axon_memory_copy(void* dst, const void* src, size_t bytes, axon_stream stream);

// Sets `bytes` of device memory to `value`, queued on `stream`.
axon_status axon_memory_set_async(void* dst, int value, size_t bytes, axon_stream stream);

#ifdef __cplusplus
}  // extern "C"
#endif
