// The object behind the opaque axon_stream handle.
//
// Thread-safety: every field is guarded by the Scheduler's mutex.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "axon/status.h"
#include "item_ring.h"
#include "queue_item.h"

namespace axon::common {

// A task failure waiting to be reported by the next synchronize or query.
struct PendingError {
  std::string message;
  std::uint64_t failure_order = 0;  // lets device_synchronize report the earliest
  // What the failed task returned when it named its kind of failure
  // (axon_status_is_task_failure), else AXON_ERROR_TASK_FAILED.
  axon_status status = AXON_ERROR_TASK_FAILED;
};

}  // namespace axon::common

struct axon_stream_object {
  int device = 0;
  int priority = 0;
  int number = 0;  // per-device, for messages; the default stream is 0
  bool is_default = false;
  axon::common::ItemRing<axon::common::QueueItem> queue;
  std::uint64_t submitted = 0;
  std::uint64_t completed = 0;
  // The smallest ticket a host in Scheduler::wait_for_tickets waits for on
  // this stream; the worker wakes hosts when `completed` reaches it.
  std::uint64_t host_wake_ticket = std::numeric_limits<std::uint64_t>::max();
  std::optional<axon::common::PendingError> pending_error;
};
