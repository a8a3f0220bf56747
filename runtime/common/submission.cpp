// submit_work: the one path by which launches, copies, sets and markers are queued.

#include "submission.h"

#include <memory>
#include <utility>

#include "driver_error.h"

namespace axon::common {

void submit_work(Scheduler& scheduler, bool launch_blocking, axon_stream stream_handle, QueueItem&& item,
                 Completion completion) {
  const bool wait = completion == Completion::wait || launch_blocking;
  std::shared_ptr<TaskOutcome> outcome;
  if (wait && (std::holds_alternative<OwnedTask>(item.work) || std::holds_alternative<DeviceWork>(item.work))) {
    outcome = std::make_shared<TaskOutcome>();
    item.blocking_outcome = outcome;
  }
  auto lock = scheduler.lock();
  axon_stream_object* stream = scheduler.find_stream(stream_handle);
  const std::uint64_t ticket = scheduler.submit(stream, std::move(item));
  if (!wait) return;
  // A stream destroyed meanwhile (a caller bug) was drained before it went.
  scheduler.wait_for_tickets(lock, {{stream, ticket}});
  if (outcome && outcome->status != AXON_SUCCESS) {
    const axon_status status = axon_status_is_task_failure(outcome->status) ? outcome->status : AXON_ERROR_TASK_FAILED;
    throw DriverError(status, outcome->message.empty() ? std::string("a task failed (detail lost)") : outcome->message);
  }
  // An explicit wait is a synchronization point: it reports (once) what an
  // earlier task on the stream left pending, as axon_stream_synchronize would.
  if (completion == Completion::wait && scheduler.is_live_stream(stream) && stream->pending_error) {
    std::string message = std::move(stream->pending_error->message);
    const axon_status status = stream->pending_error->status;
    stream->pending_error.reset();
    throw DriverError(status, std::move(message));
  }
}

}  // namespace axon::common
