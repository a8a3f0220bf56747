// Copies and sets (common/memory_calls.h checks the calls): classify each pointer, then queue the work.

#include <cstring>
#include <memory>
#include <new>

#include "axon/memory.h"
#include "device_range.h"
#include "driver.h"
#include "driver_error.h"
#include "submission.h"

using namespace axon::common;

using namespace axon::emulated;

namespace {

enum class MemoryKind { device, pinned_host, pageable_host };

const char* name_of(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::device:
      return "device memory";
    case MemoryKind::pinned_host:
      return "pinned host memory";
    case MemoryKind::pageable_host:
      return "pageable host memory";
  }
  return "unknown memory";
}

struct MemoryRegion {
  MemoryKind kind = MemoryKind::pageable_host;
  void* host_address = nullptr;  // where the worker reads or writes the bytes
};

// Classifies [pointer, pointer + bytes) and checks it stays inside one live
// allocation or import when the driver knows it.
MemoryRegion locate_region(Driver& driver, const void* pointer, size_t bytes, const char* role) {
  if (pointer == nullptr) fail(AXON_ERROR_INVALID_VALUE, "expected a non-null ", role, " pointer, got null");
  if (const auto device = find_device_range(driver, pointer, bytes, role)) {
    return {MemoryKind::device, device->host_address};
  }
  if (driver.pinned_host().holds_range(pointer, bytes, role)) {
    return {MemoryKind::pinned_host, const_cast<void*>(pointer)};
  }
  return {MemoryKind::pageable_host, const_cast<void*>(pointer)};
}

}  // namespace

namespace axon::emulated {

void Driver::queue_copy(void* dst, const void* src, size_t bytes, axon_stream stream, Completion completion) {
  const MemoryRegion destination = locate_region(*this, dst, bytes, "destination");
  const MemoryRegion source = locate_region(*this, src, bytes, "source");
  CopyWork copy;
  copy.destination = destination.host_address;
  copy.source = source.host_address;
  copy.bytes = bytes;
  if (source.kind == MemoryKind::pageable_host) {
    // Staged now so the caller may reuse its buffer as soon as we return.
    copy.staged_source.reset(new (std::nothrow) unsigned char[bytes]);
    if (!copy.staged_source) {
      fail(AXON_ERROR_OUT_OF_MEMORY, "cannot stage ", bytes, " bytes of pageable host memory for the copy");
    }
    std::memcpy(copy.staged_source.get(), src, bytes);
    copy.source = copy.staged_source.get();
  }
  const axon_activity_kind kind =
      destination.kind == MemoryKind::device
          ? (source.kind == MemoryKind::device ? AXON_ACTIVITY_COPY_DEVICE_TO_DEVICE
                                               : AXON_ACTIVITY_COPY_HOST_TO_DEVICE)
          : (source.kind == MemoryKind::device ? AXON_ACTIVITY_COPY_DEVICE_TO_HOST : AXON_ACTIVITY_COPY_HOST_TO_HOST);
  submit_work(scheduler(), launch_blocking(), stream, described(QueueItem{std::move(copy), 0, nullptr}, kind, bytes),
              completion);
}

void Driver::queue_set(void* dst, int value, size_t bytes, axon_stream stream) {
  const MemoryRegion destination = locate_region(*this, dst, bytes, "destination");
  if (destination.kind != MemoryKind::device) {
    fail(AXON_ERROR_INVALID_POINTER, "expected device memory as destination, got ", name_of(destination.kind), " at ",
         dst);
  }
  submit_work(
      scheduler(), launch_blocking(), stream,
      described(QueueItem{SetWork{destination.host_address, value, bytes}, 0, nullptr}, AXON_ACTIVITY_SET, bytes),
      Completion::asynchronous);
}

}  // namespace axon::emulated
