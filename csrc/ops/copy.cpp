// Copy semantics follow CUDA:
// - host to device: queued on the destination's current stream; returns at
//   once only for non_blocking copies (pinned sources are then kept from
//   reuse until the copy has run; pageable sources are staged by the driver);
// - device to host: queued, then waited for unless non_blocking with a
//   pinned destination;
// - device to device: queued; across devices the destination's stream first
//   waits for the source's current stream.
// Dtype conversion and non-contiguous layouts run as a device kernel
// (ATen's CPU copy over aliases) or on the host side of the transfer.
#include "ops/copy.h"

#include <ATen/MemoryOverlap.h>
#include <ATen/ops/_local_scalar_dense.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/DeviceGuard.h>

#include "core/check.h"
#include "core/copy_on_write.h"
#include "core/device_allocator.h"
#include "core/host_waits.h"
#include "core/pinned_memory_allocator.h"
#include "core/stream.h"
#include "host_execution/device_memory_views.h"
#include "host_execution/stream_launch.h"

namespace axon {
namespace {

// True when a plain byte copy between the two tensors is a correct copy.
bool bytes_match(const at::Tensor& a, const at::Tensor& b) {
  return a.dtype() == b.dtype() && a.sizes() == b.sizes() && a.strides() == b.strides() && a.is_conj() == b.is_conj() &&
         a.is_neg() == b.is_neg() && a.is_non_overlapping_and_dense() && b.is_non_overlapping_and_dense();
}

bool is_pinned(const at::Tensor& tensor) {
  int pinned = 0;
  return axon_host_pointer_is_pinned(tensor.const_data_ptr(), &pinned) == AXON_SUCCESS && pinned != 0;
}

// Same-device copy on the current stream: a byte copy when layouts agree,
// otherwise ATen's CPU copy kernel over aliases (conversion, strides). A
// large byte copy in memory the host addresses also runs as ATen's copy over
// aliases: the driver's copy is one memmove on the device's worker, and the
// CPU's copy_ splits the bytes over the worker's OpenMP team (a 16 MiB clone:
// 0.62 ms as a driver copy against 0.37 ms for the CPU's).
void copy_on_device(const at::Tensor& dst, const at::Tensor& src) {
  const axon_stream stream = current_stream_handle(dst.device().index());
  const bool with_team = dst.nbytes() >= kSingleThreadBelowBytes && host_addressable(dst.device().index());
  if (bytes_match(dst, src) && !with_team) {
    AXON_CHECK(axon_memory_copy_async(dst.data_ptr(), src.const_data_ptr(), dst.nbytes(), stream),
               "copying between axon tensors");
    return;
  }
  HostAliases aliases;  // shared: copies between overlapping views stay correct
  launch_on_stream(stream, "aten::copy_", aliases,
                   [dst_alias = aliases.alias(dst, Access::overwrite), src_alias = aliases.alias(src)]() mutable {
                     dst_alias.copy_(src_alias);
                   });
}

void copy_between_devices(const at::Tensor& dst, const at::Tensor& src) {
  // Bring src into dst's layout and dtype on its own device first.
  at::Tensor staged = src;
  if (!bytes_match(dst, src)) {
    const c10::DeviceGuard src_guard(src.device());
    staged = at::empty_strided(dst.sizes(), dst.strides(), dst.options().device(src.device()));
    if (!staged.is_non_overlapping_and_dense()) {
      staged = at::empty(dst.sizes(), dst.options().device(src.device()));
    }
    copy_on_device(staged, src);
  }
  const c10::Stream src_stream = current_stream(src.device().index());
  const c10::Stream dst_stream = current_stream(dst.device().index());
  axon_event ready = nullptr;
  AXON_CHECK(axon_event_create(AXON_EVENT_DEFAULT, &ready), "creating a cross-device copy event");
  axon_status status = axon_event_record(ready, stream_handle(src_stream));
  if (status == AXON_SUCCESS) {
    status = axon_stream_wait_event(stream_handle(dst_stream), ready);
  }
  axon_event_destroy(ready);
  AXON_CHECK(status, "ordering a cross-device copy");
  // The source block may be freed while this copy is queued on another stream.
  device_allocator_record_stream(staged.storage().data_ptr(), dst_stream);
  if (bytes_match(dst, staged)) {
    AXON_CHECK(axon_memory_copy_async(dst.data_ptr(), staged.const_data_ptr(), dst.nbytes(), stream_handle(dst_stream)),
               "copying between axon devices");
  } else {
    at::Tensor landed = at::empty(dst.sizes(), dst.options());
    AXON_CHECK(
        axon_memory_copy_async(landed.data_ptr(), staged.const_data_ptr(), landed.nbytes(), stream_handle(dst_stream)),
        "copying between axon devices");
    copy_on_device(dst, landed);
  }
  // Later work on the source device (say, an in-place update of src) must
  // not overtake the copy that is still reading src on the other device:
  // the source stream waits for the copy, as CUDA orders peer copies both ways.
  axon_event copied = nullptr;
  AXON_CHECK(axon_event_create(AXON_EVENT_DEFAULT, &copied), "creating a cross-device copy event");
  status = axon_event_record(copied, stream_handle(dst_stream));
  if (status == AXON_SUCCESS) {
    status = axon_stream_wait_event(stream_handle(src_stream), copied);
  }
  axon_event_destroy(copied);
  AXON_CHECK(status, "ordering the source device after a cross-device copy");
}

void copy_host_to_device(const at::Tensor& dst, const at::Tensor& src, bool non_blocking) {
  const c10::DeviceGuard guard(dst.device());
  at::Tensor host = src;
  if (host.dtype() != dst.dtype() || host.sizes() != dst.sizes() || !host.is_non_overlapping_and_dense()) {
    host = src.to(dst.scalar_type()).expand(dst.sizes()).contiguous();
  }
  if (host.is_conj() != dst.is_conj() || host.is_neg() != dst.is_neg()) {
    host = host.resolve_conj().resolve_neg();
  }
  const c10::Stream stream = current_stream(dst.device().index());
  start_worker_team_once(dst.device().index(), stream_handle(stream));
  at::Tensor landing = dst;
  if (!bytes_match(dst, host)) {
    landing = at::empty_strided(host.sizes(), host.strides(), dst.options());
  }
  AXON_CHECK(axon_memory_copy_async(landing.data_ptr(), host.const_data_ptr(), host.nbytes(), stream_handle(stream)),
             "copying from host to axon");
  if (landing.const_data_ptr() != dst.const_data_ptr()) {
    copy_on_device(dst, landing);
  }
  if (non_blocking && host.is_same(src) && is_pinned(src)) {
    pinned_memory_record_use(src.storage().data_ptr(), stream);
  }
  if (!non_blocking) {
    AXON_CHECK(wait_for_stream(stream_handle(stream)), "waiting for a host to axon copy");
  }
}

void copy_device_to_host(const at::Tensor& dst, const at::Tensor& src, bool non_blocking) {
  const c10::DeviceGuard guard(src.device());
  at::Tensor device_source = src;
  if (src.dtype() != dst.dtype() || src.sizes() != dst.sizes() || !src.is_non_overlapping_and_dense() ||
      src.is_conj() || src.is_neg() || (dst.is_non_overlapping_and_dense() && src.strides() != dst.strides())) {
    device_source = dst.is_non_overlapping_and_dense()
                        ? at::empty_strided(dst.sizes(), dst.strides(), dst.options().device(src.device()))
                        : at::empty(dst.sizes(), dst.options().device(src.device()));
    copy_on_device(device_source, src);
  }
  const c10::Stream stream = current_stream(src.device().index());
  const bool direct = bytes_match(dst, device_source);
  at::Tensor landing = direct ? dst : at::empty_strided(device_source.sizes(), device_source.strides(), dst.options());
  AXON_CHECK(axon_memory_copy_async(landing.data_ptr(), device_source.const_data_ptr(), landing.nbytes(),
                                    stream_handle(stream)),
             "copying from axon to host");
  if (non_blocking && direct && is_pinned(dst)) {
    pinned_memory_record_use(dst.storage().data_ptr(), stream);
    return;  // the caller synchronizes before reading, as with CUDA
  }
  AXON_CHECK(wait_for_stream(stream_handle(stream)), "waiting for an axon to host copy");
  if (!direct) {
    dst.copy_(landing);
  }
}

}  // namespace

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  TORCH_CHECK(self.defined() && dst.defined(), "[axon] copy_ needs defined tensors");
  at::Tensor src = self;
  if (src.sizes() != dst.sizes()) {
    src = src.expand(dst.sizes());
  }
  if (dst.numel() == 0) {
    return dst;
  }
  const bool src_on_axon = src.is_privateuseone();
  const bool dst_on_axon = dst.is_privateuseone();
  // ATen's copy_ hands a PrivateUse1 copy to _copy_from before its
  // TensorIterator would check the written-to tensor, so the CPU's checks
  // are made here, at the call.
  at::assert_no_internal_overlap(dst);
  // On dst's device and its current stream, before anything below queues
  // work there or records an event for it (core/copy_on_write.h).
  if (dst_on_axon) materialize_for_write(dst.storage());
  if (src_on_axon && dst_on_axon) {
    at::assert_no_partial_overlap(dst, src);
    if (src.device() == dst.device()) {
      const c10::DeviceGuard guard(dst.device());
      copy_on_device(dst, src);
    } else {
      copy_between_devices(dst, src);
    }
  } else if (dst_on_axon) {
    TORCH_CHECK(src.is_cpu(), "[axon] copy_: cannot copy from ", src.device(), " to ", dst.device());
    copy_host_to_device(dst, src, non_blocking);
  } else {
    TORCH_CHECK(dst.is_cpu(), "[axon] copy_: cannot copy from ", src.device(), " to ", dst.device());
    copy_device_to_host(dst, src, non_blocking);
  }
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  if (dst.sizes() != self.sizes()) {
    dst.resize_(self.sizes());
  }
  return copy_from(self, dst, false);
}

c10::Scalar local_scalar_dense(const at::Tensor& self) {
  // The CPU kernel's check and words; Tensor.item() checks for exactly one
  // element before it gets here, and a direct call reads the first, as there.
  TORCH_CHECK(self.numel() > 0, "_local_scalar_dense: Empty tensor not supported");
  at::Tensor host = at::empty({}, self.options().device(c10::kCPU));
  const c10::DeviceGuard guard(self.device());
  AXON_CHECK(copy_and_wait(host.data_ptr(), self.const_data_ptr(), self.element_size(),
                           current_stream_handle(self.device().index())),
             "reading a scalar from axon (Tensor.item)");
  return at::_local_scalar_dense(host);
}

}  // namespace axon
