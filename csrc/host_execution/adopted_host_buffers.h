// Host buffers and axon memory shared without copying, both ways.
//
// adopt_host_tensor turns a host buffer another library allocated (a jax or
// NumPy array reached through DLPack as a CPU tensor) into an axon tensor over
// the same bytes; owning_host_alias is the reverse, a CPU tensor over axon
// memory. Both exist only because the emulated device's memory is host memory
// (the driver's optional axon_memory_import_host / axon_memory_host_view),
// which is why they live in host_execution/: on a driver whose memory the host
// cannot address they raise instead of aliasing.
//
// Thread-safety: both functions are thread-safe. Neither synchronizes: the
// bytes are shared, so work still queued on axon streams may be reading or
// writing them (synchronize before touching them from the host).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace axon {

// An axon tensor on `device` over the same bytes as `cpu_tensor` (any dtype,
// sizes, strides, storage offset; conj/neg flags kept), by importing the CPU
// storage's whole byte range into the driver (axon_memory_import_host).
//
// Lifetime: the axon storage keeps the CPU storage, and so the producer's
// buffer, alive. When the last reference to the axon storage dies, the work
// queued on the streams that used it is waited for (see
// device_allocator_wrap_external), the import ends, and only then is the CPU
// storage dropped. The axon storage is resizable like any other (resizing
// moves its bytes into the device allocator's memory and ends the import).
//
// Accounting: the import counts against the device's capacity and in the
// caching allocator's statistics (memory_allocated, memory_reserved,
// memory_stats) at the storage's exact byte size, until it dies. Adopting a
// storage whose bytes are already adopted returns a tensor on the existing
// axon storage, so views of one buffer stay views of one storage.
//
// Throws ValueError-like errors for an undefined, non-CPU or non-strided
// tensor, for bytes already adopted on another device or as a different
// range, IndexError for a bad device, and torch.OutOfMemoryError when the
// device's capacity is exhausted even after emptying the allocator's cache.
at::Tensor adopt_host_tensor(const at::Tensor& cpu_tensor, c10::DeviceIndex device);

// A CPU tensor over the same bytes as the axon tensor `device_tensor` (same
// sizes, strides, offset, dtype, conj/neg flags), through the driver's host
// view of device memory. Unlike the kernels' non-owning aliases
// (device_memory_views.h), its storage keeps the axon storage alive.
at::Tensor owning_host_alias(const at::Tensor& device_tensor);

}  // namespace axon
