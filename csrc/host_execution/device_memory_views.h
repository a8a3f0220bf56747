// CPU tensors over axon memory, for kernels executing on the device.
//
// The eager kernels of this folder are ATen's CPU kernels: a kernel running
// on an axon stream sees each axon tensor as a CPU tensor over the same
// bytes. How it reaches the bytes depends on the driver:
//  - memory the host can address (the emulated driver): the alias views the
//    device bytes in place, through the driver's host view;
//  - memory it cannot (the PJRT driver: device memory is PJRT buffers): the
//    alias views a pinned host staging buffer instead. The bytes the kernel
//    reads are copied in before it runs and the bytes it writes are copied
//    back after it, all in stream order (stage_in / stage_out below), so
//    this seam works on any driver with copies and host functions.
// Aliases never own device memory; the axon tensors keep it alive (the
// caching allocator's stream ordering keeps it from being reused early).
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <c10/core/Allocator.h>
#include <c10/util/SmallVector.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "axon/stream.h"

namespace axon {

// How a kernel uses an argument: only reads it, reads and writes it, or
// writes every one of its elements without reading them (a fresh output, a
// copy's destination), so its old bytes need not be staged in.
enum class Access { read, write, overwrite };

// Aliases for the arguments of one kernel call. Axon tensors sharing a
// storage get aliases sharing one CPU storage, and a tensor passed twice
// gets one alias, so ATen's overlap and identity checks (out= overlapping
// an input, out= being an input, in-place on an expanded view) see what
// they would see on the CPU.
class HostAliases {
 public:
  HostAliases() = default;
  HostAliases(const HostAliases&) = delete;
  HostAliases& operator=(const HostAliases&) = delete;

  // CPU alias of an axon tensor (same sizes, strides, offset, dtype, bytes,
  // conj/neg flags). CPU tensors (e.g. wrapped scalars) are returned
  // unchanged; undefined stays undefined. `access` says whether the kernel
  // writes through it (only staged memory needs to know).
  at::Tensor alias(const at::Tensor& tensor, Access access = Access::read);

  // alias() applied to every tensor inside an operator argument.
  c10::IValue alias(const c10::IValue& value, Access access = Access::read);

  // Whether some alias views a staging buffer rather than device memory.
  bool staged() const;

  // The axon tensor viewing what `host` views (same sizes, strides, offset,
  // dtype), when `host` lies in a storage these aliases made; undefined
  // otherwise. Maps a CPU kernel's result that is a view of its input (a
  // sparse tensor's values, a nested tensor's component) back to the device.
  at::Tensor device_view(const at::Tensor& host) const;

  // Bytes of device memory the aliases made so far cover, read or written.
  std::size_t bytes_covered() const;

  // Staged memory only (no-ops otherwise). stage_in queues, on `stream`, the
  // copies of the device bytes every alias covers into the staging buffers;
  // call it after making the aliases and before queuing the kernel.
  // stage_out queues the copies of the bytes written aliases cover back to
  // the device, then lets the staging buffers go once the stream has passed
  // them; call it right after queuing the kernel.
  void stage_in(axon_stream stream);
  void stage_out(axon_stream stream);

 private:
  // One axon storage seen by this call.
  struct StorageView {
    c10::Storage device_storage;
    c10::Storage host_storage;
    char* device_bytes = nullptr;
    c10::DataPtr staging;  // pinned host bytes, when the device's memory is not host-addressable
    // Byte ranges [begin, end) of the storage the aliases cover, and those written.
    std::size_t read_begin = 0, read_end = 0;
    std::size_t write_begin = 0, write_end = 0;
    int writers = 0;  // aliases written through
  };

  // One axon tensor's alias, over the device memory it had when made.
  struct TensorAlias {
    const c10::TensorImpl* device = nullptr;
    const char* device_bytes = nullptr;
    at::Tensor alias;
  };

  StorageView& view_of(const at::Tensor& tensor);

  std::vector<StorageView> storages_;
  std::vector<TensorAlias> tensors_;
};

// Host aliases described on the thread that queues a kernel and made by the
// worker that runs it, for memory the host can address. They share as
// HostAliases' do (one CPU storage per axon storage, one alias per axon
// tensor), but the CPU TensorImpls and storages are built, used and freed on
// the worker: the thread dispatching operators only copies a few numbers per
// tensor. Why: building and later freeing them was a fifth of a tiny
// operator's time on the dispatching thread, which bounds the rate at which
// small operators reach the device (docs/benchmarks.md).
class DeferredAliases {
 public:
  // Records axon tensor `tensor`, whose memory the host must be able to
  // address (host_addressable; HostAliases stages other memory), and returns
  // the position make() gives its alias.
  // Where `access` says the kernel writes it, a storage shared with a lazy
  // clone first gets memory of its own (core/copy_on_write.h).
  std::size_t add(const at::Tensor& tensor, Access access);

  // Bytes of device memory the recorded tensors cover.
  std::size_t bytes_covered() const;

  // The larger of bytes_covered and the bytes of every element of every
  // recorded tensor: what a kernel over them visits, which chooses its
  // threads (launch_on_stream). A broadcast operand (an expanded gradient of
  // ones, 4 bytes of storage behind megabytes of elements) covers almost
  // nothing, yet a kernel reads each of its elements: a bicubic upsampling's
  // backward over one took 8.5 ms on one thread against 4.3 ms on two.
  std::size_t bytes_visited() const;

  // On the worker: the aliases, in the order add() numbered them.
  c10::SmallVector<at::Tensor, 4> make() const;

 private:
  struct Storage {
    const c10::StorageImpl* device = nullptr;  // identity only: never dereferenced after add()
    void* device_bytes = nullptr;              // mapped to host bytes by make(), on the worker
    void* host_bytes = nullptr;                // the allocator's host view of device_bytes, where it has one
    std::size_t nbytes = 0;
    std::size_t begin = 0, end = 0;  // the bytes the recorded tensors cover
  };
  std::size_t element_bytes_ = 0;  // each recorded tensor's elements' bytes, summed
  // Trivially copyable, like Storage, so that moving the description into
  // a launch is a few memcpys (element-wise moves of per-view vectors were a
  // visible share of a tiny operator's time).
  struct View {
    const c10::TensorImpl* device = nullptr;  // identity only
    std::size_t storage = 0;
    std::size_t dims_at = 0;  // sizes at dims_[dims_at, dims_at + dim), strides after them
    std::size_t dim = 0;
    int64_t offset = 0;
    caffe2::TypeMeta dtype;
    bool conj = false;
    bool neg = false;
  };
  c10::SmallVector<Storage, 4> storages_;
  c10::SmallVector<View, 4> views_;
  c10::SmallVector<int64_t, 24> dims_;
};

// One-off alias of a single axon tensor, for code other than kernel bodies
// (the collectives' transport). Unlike HostAliases, which only the kernels
// use, it raises NotImplementedError where the driver says the host cannot
// address the device's memory, so that no caller outside the kernels can
// depend on it silently (AXON_EMULATED_PRIVATE_MEMORY=1 tests this).
at::Tensor host_alias(const at::Tensor& tensor);

// The host address of device bytes a kernel works on: `known`, the
// allocator's view of their block (device_allocator_host_view), where it has
// one, else the driver's answer (memory the host can address only).
void* host_bytes_for_kernel(void* device_bytes, void* known);

// Whether the driver says the host can address `device`'s memory
// (AXON_CAPABILITY_HOST_ADDRESSABLE_MEMORY). Code outside host_execution/
// that would alias device memory asks this first and otherwise copies.
bool host_addressable(c10::DeviceIndex device);

}  // namespace axon
