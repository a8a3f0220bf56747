// Memory: device allocations, page-locked ("pinned") host memory, copies.
//
// Device memory belongs to one device and counts against its capacity
// (axon_device_properties.total_memory). It is either allocated by the driver
// (axon_memory_allocate) or imported from host memory that someone else owns
// (axon_memory_import_host); both behave alike in every call below. Device
// pointers are opaque to host code: only the driver (copies) and tasks running
// on a stream may touch the bytes, through axon_memory_host_view(). The driver
// identifies the memory kind of any pointer itself, so copy calls take no
// direction argument.
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

// Releases an allocation, or ends an import, by its base address (interior
// pointers are refused). Ending an import leaves the host bytes alone: their
// owner frees them afterwards. The caller guarantees no pending task still
// uses the memory (the caching allocator above synchronizes before returning
// memory). Freeing null is a no-op. After shutdown, frees succeed without
// doing anything.
axon_status axon_memory_free(void* ptr);

// Device that owns `ptr` (any address inside a live allocation or import), or
// AXON_ERROR_INVALID_POINTER if `ptr` is not device memory.
axon_status axon_memory_pointer_device(const void* ptr, int* device);

// Bytes of the device's capacity in use: each axon_memory_allocate allocation
// at its reserved size (the request rounded up to the driver's allocation
// granule, 256 bytes in the emulated driver), each import at its exact size.
axon_status axon_memory_used(int device, size_t* bytes);

// Host-accessible alias of device memory, for tasks executing on a stream.
// Optional slot: an emulated driver returns an address the host may
// dereference (identical to `ptr` unless memory protection is on; imported
// memory is always its own host address, see below); a real chip's driver
// returns AXON_ERROR_NOT_SUPPORTED, as its kernels run on the device itself.
axon_status axon_memory_host_view(const void* ptr, void** host_ptr);

// ---- imported host memory -------------------------------------------------

// Adopts `bytes` (> 0) of caller-owned host memory at `host_ptr` as device
// memory of `device`, without copying: *device_ptr then works wherever device
// memory does (copies, sets, tasks, pointer queries, axon_memory_free), and
// the import counts against the device's capacity and in axon_memory_used
// like an allocation. Meant for buffers a foreign runtime produced for the
// device (e.g. the outputs of XLA's CPU executables); a real chip imports
// external memory (dma-buf, another runtime's device buffers) here instead.
//
// Ownership and lifetime: the caller keeps owning the bytes and must keep
// them valid, and not touch them while device work may, until
// axon_memory_free(*device_ptr) has ended the import; freeing them is then
// its own business. No alignment is required. Ranges may not overlap a live
// import, device memory or the driver's host views of it
// (AXON_ERROR_INVALID_VALUE); pinned host memory may be imported.
//
// Failures (null or zero-sized range, range wrapping around the address
// space, overlap: AXON_ERROR_INVALID_VALUE; bad device:
// AXON_ERROR_INVALID_DEVICE; capacity exceeded: AXON_ERROR_OUT_OF_MEMORY with
// requested, in-use and capacity bytes) import nothing and leave *device_ptr
// untouched.
//
// Emulated driver: *device_ptr == host_ptr, and axon_memory_host_view
// returns that same address. AXON_MEMORY_PROTECT=1 does not apply to imported
// memory: there is no separate protected view, so host code dereferencing
// *device_ptr does not fault.
//
// Optional slot: a driver that cannot reach host memory from the device
// returns AXON_ERROR_NOT_SUPPORTED (callers then copy instead).
axon_status axon_memory_import_host(int device, void* host_ptr, size_t bytes, void** device_ptr);

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
// A range in device or pinned memory must lie inside one live allocation or
// import (AXON_ERROR_INVALID_VALUE otherwise). `bytes` == 0 only validates `stream`.
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
