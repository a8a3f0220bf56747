// Copies and sets (common/memory_calls.h checks the calls): classify each pointer, then queue the work. Device
// bytes move only through PJRT transfers (DeviceMemory::read/write), on the stream's worker.

#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "axon/memory.h"
#include "driver.h"
#include "driver_error.h"
#include "submission.h"

using namespace axon::common;
using namespace axon::pjrt_driver;

namespace {

// Where one side of a copy lies: a device range, or host memory (pinned or pageable).
struct Side {
  std::optional<DeviceRange> device;
  bool pinned = false;
};

Side locate(Driver& driver, const void* pointer, size_t bytes, const char* role) {
  if (pointer == nullptr) fail(AXON_ERROR_INVALID_VALUE, "expected a non-null ", role, " pointer, got null");
  Side side;
  side.device = driver.memory().find(pointer, bytes, role);
  if (side.device) return side;
  side.pinned = driver.pinned_host().holds_range(pointer, bytes, role);
  return side;
}

void submit(Driver& driver, axon_stream stream, QueueItem item, Completion completion) {
  submit_work(driver.scheduler(), driver.launch_blocking(), stream, std::move(item), completion);
}

DeviceWork device_work(std::function<void()> body) {
  return DeviceWork{[body = std::move(body)](std::string*) {
    body();
    return AXON_SUCCESS;
  }};
}

}  // namespace

namespace axon::pjrt_driver {

void Driver::queue_copy(void* dst, const void* src, size_t bytes, axon_stream stream, Completion completion) {
  const Side destination = locate(*this, dst, bytes, "destination");
  const Side source = locate(*this, src, bytes, "source");
  DeviceMemory& memory = *memory_;
  // A pageable source is staged now, so the caller may reuse its buffer as soon as we return.
  const bool stage_source = !source.device && !source.pinned;
  if (!destination.device && !source.device) {
    CopyWork copy;
    copy.destination = dst;
    copy.source = src;
    copy.bytes = bytes;
    if (stage_source) {
      copy.staged_source.reset(new unsigned char[bytes]);
      std::memcpy(copy.staged_source.get(), src, bytes);
      copy.source = copy.staged_source.get();
    }
    submit(*this, stream, described(QueueItem{std::move(copy), 0, nullptr}, AXON_ACTIVITY_COPY_HOST_TO_HOST, bytes),
           completion);
    return;
  }
  std::shared_ptr<std::vector<unsigned char>> staged;
  if (stage_source) {
    staged = std::make_shared<std::vector<unsigned char>>(static_cast<const unsigned char*>(src),
                                                          static_cast<const unsigned char*>(src) + bytes);
    src = staged->data();
  }
  std::function<void()> body;
  axon_activity_kind kind = AXON_ACTIVITY_COPY_DEVICE_TO_HOST;
  if (destination.device && source.device) {
    kind = AXON_ACTIVITY_COPY_DEVICE_TO_DEVICE;
    body = [&memory, to = *destination.device, from = *source.device, bytes] {
      std::vector<unsigned char> bounce(bytes);
      memory.read(from, bytes, bounce.data());
      memory.write(to, bytes, bounce.data());
    };
  } else if (destination.device) {
    kind = AXON_ACTIVITY_COPY_HOST_TO_DEVICE;
    body = [&memory, to = *destination.device, src, bytes, staged] { memory.write(to, bytes, src); };
  } else {
    body = [&memory, from = *source.device, dst, bytes] { memory.read(from, bytes, dst); };
  }
  submit(*this, stream, described(QueueItem{device_work(std::move(body)), 0, nullptr}, kind, bytes), completion);
}

void Driver::queue_set(void* dst, int value, size_t bytes, axon_stream stream) {
  const Side destination = locate(*this, dst, bytes, "destination");
  if (!destination.device) {
    fail(AXON_ERROR_INVALID_POINTER, "expected device memory as destination, got ",
         destination.pinned ? "pinned host memory" : "pageable host memory", " at ", dst);
  }
  DeviceMemory& memory = *memory_;
  QueueItem fill{device_work([&memory, to = *destination.device, bytes, value] {
                   memory.fill(to, bytes, static_cast<unsigned char>(value));
                 }),
                 0, nullptr};
  submit(*this, stream, described(std::move(fill), AXON_ACTIVITY_SET, bytes), Completion::asynchronous);
}

}  // namespace axon::pjrt_driver
