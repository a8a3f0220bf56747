// The kinds of work a stream queue holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <variant>

#include "activity_log.h"
#include "axon/stream.h"
#include "event_state.h"

namespace axon::common {

// Owns an axon_host_function and calls its `release` exactly once: explicitly after
// running, or on destruction if the task is dropped without running.
class OwnedTask {
 public:
  explicit OwnedTask(axon_host_function task) : task_(task) {}
  OwnedTask(OwnedTask&& other) noexcept : task_(other.task_), owned_(std::exchange(other.owned_, false)) {}
  OwnedTask& operator=(OwnedTask&& other) noexcept {
    if (this != &other) {
      release();
      task_ = other.task_;
      owned_ = std::exchange(other.owned_, false);
    }
    return *this;
  }
  OwnedTask(const OwnedTask&) = delete;
  OwnedTask& operator=(const OwnedTask&) = delete;
  ~OwnedTask() { release(); }

  const axon_host_function& task() const { return task_; }

  void release() noexcept {
    if (!owned_) return;
    owned_ = false;
    if (task_.release == nullptr) return;
    try {
      task_.release(task_.user_data);
    } catch (...) {
      // A C callback has no way to report failure; swallow rather than
      // unwinding through the worker.
    }
  }

 private:
  axon_host_function task_;
  bool owned_ = true;
};

// Runs `task` on the calling thread. On failure (a status other than
// AXON_SUCCESS, or an exception) returns the status and sets `message` to the
// task's own words, or says it wrote none. Shared by the device worker and
// axon_stream_run_host_function_if_idle, so both report a failure alike.
axon_status run_host_task(const axon_host_function& task, std::string* message);

// Work a driver hands to its chip (PJRT calls, say), run on the device's
// worker in stream order. It returns AXON_SUCCESS, or a failure status with
// its message (reported like a failed host function), and returns only once
// the chip has finished it: the next item of the stream may depend on it.
struct DeviceWork {
  std::function<axon_status(std::string* message)> run;
};

// A host-to-host copy. In the emulated driver device memory is host memory
// too (addresses are its host view).
struct CopyWork {
  void* destination = nullptr;
  const void* source = nullptr;
  std::size_t bytes = 0;
  std::unique_ptr<unsigned char[]> staged_source;  // owns `source` when it was pageable
};

struct SetWork {
  void* destination = nullptr;
  int value = 0;
  std::size_t bytes = 0;
};

struct EventRecordMarker {
  std::shared_ptr<EventState> event;
  std::uint64_t recording = 0;
};

struct EventWaitMarker {
  std::shared_ptr<EventState> event;
  std::uint64_t recording = 0;
};

// Where a launch-blocking submission receives its task's result, instead of
// the stream's pending error.
struct TaskOutcome {
  axon_status status = AXON_SUCCESS;
  std::string message;
};

struct QueueItem {
  std::variant<OwnedTask, DeviceWork, CopyWork, SetWork, EventRecordMarker, EventWaitMarker> work;
  std::uint64_t device_order = 0;  // submission order on the device, breaks priority ties
  std::shared_ptr<TaskOutcome> blocking_outcome;
  ActivityMark activity;  // what its activity record says (axon/activity.h); host function unless set
};

// `item`, saying what it is for its activity record: the kind of work, the
// bytes a copy or set moves, and the driver's name for it (an entry point).
inline QueueItem described(QueueItem item, axon_activity_kind kind, std::uint64_t bytes = 0, std::string name = {}) {
  item.activity.kind = kind;
  item.activity.bytes = bytes;
  item.activity.name = std::move(name);
  return item;
}

}  // namespace axon::common
