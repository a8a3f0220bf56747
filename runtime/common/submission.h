// Submitting queue items on behalf of the extern "C" calls, including the
// launch-blocking mode where every submission waits for its own completion.
#pragma once

#include "axon/stream.h"
#include "queue_item.h"
#include "scheduler.h"

namespace axon::common {

enum class Completion {
  asynchronous,  // return once queued (unless the driver is launch-blocking)
  wait,          // always wait until the stream has finished the item
};

// Validates the stream handle, queues `item` and, when the driver is
// launch-blocking or `completion` says so, waits for it. A waited-for task's
// failure is thrown (AXON_ERROR_TASK_FAILED) instead of becoming the stream's
// pending error; Completion::wait also throws (and clears) the stream's
// pending error, like axon_stream_synchronize.
void submit_work(Scheduler& scheduler, bool launch_blocking, axon_stream stream, QueueItem&& item,
                 Completion completion);

}  // namespace axon::common
