// Entry points (driver_api.cpp puts them in the table): stream calls: lifetime, properties, launch, query, synchronize.

#include <utility>

#include "axon/stream.h"
#include "boundary.h"
#include "driver.h"
#include "entry_points.h"
#include "submission.h"

using namespace axon::emulated;

namespace {

// Returns the stream's pending error once, clearing it.
void throw_pending_error(axon_stream_object* stream) {
  if (!stream->pending_error) return;
  std::string message = std::move(stream->pending_error->message);
  const axon_status status = stream->pending_error->status;
  stream->pending_error.reset();
  throw DriverError(status, std::move(message));
}

}  // namespace

namespace axon::emulated::entry_points {

axon_status axon_stream_priority_range(int* least_urgent, int* most_urgent) {
  return guarded_call(__func__, [&] {
    Driver::running();
    require_output(least_urgent, "least_urgent");
    require_output(most_urgent, "most_urgent");
    *least_urgent = kStreamPriorityLeastUrgent;
    *most_urgent = kStreamPriorityMostUrgent;
    return AXON_SUCCESS;
  });
}

axon_status axon_stream_create(int device, int priority, axon_stream* stream) {
  return guarded_call(__func__, [&] {
    Driver& driver = Driver::running();
    driver.require_device(device);
    require_output(stream, "stream");
    auto lock = driver.scheduler().lock();
    *stream = driver.scheduler().create_stream(device, priority);
    return AXON_SUCCESS;
  });
}

axon_status axon_stream_destroy(axon_stream stream) {
  return guarded_call(__func__, [&] {
    Scheduler& scheduler = Driver::running().scheduler();
    auto lock = scheduler.lock();
    axon_stream_object* target = scheduler.find_stream(stream);
    if (target->is_default) {
      fail(AXON_ERROR_INVALID_HANDLE, "cannot destroy ", Scheduler::describe_stream(target),
           ": default streams live as long as the driver");
    }
    scheduler.wait_until(lock,
                         [&] { return !scheduler.is_live_stream(target) || target->completed == target->submitted; });
    if (!scheduler.is_live_stream(target)) {
      fail(AXON_ERROR_INVALID_HANDLE, "stream ", static_cast<const void*>(stream),
           " was destroyed by another thread while this call waited for it");
    }
    scheduler.destroy_stream(target);
    return AXON_SUCCESS;
  });
}

axon_status axon_stream_get_default(int device, axon_stream* stream) {
  return guarded_call(__func__, [&] {
    Driver& driver = Driver::running();
    driver.require_device(device);
    require_output(stream, "stream");
    auto lock = driver.scheduler().lock();
    *stream = driver.scheduler().default_stream(device);
    return AXON_SUCCESS;
  });
}

axon_status axon_stream_get_device(axon_stream stream, int* device) {
  return guarded_call(__func__, [&] {
    Scheduler& scheduler = Driver::running().scheduler();
    require_output(device, "device");
    auto lock = scheduler.lock();
    *device = scheduler.find_stream(stream)->device;
    return AXON_SUCCESS;
  });
}

axon_status axon_stream_get_priority(axon_stream stream, int* priority) {
  return guarded_call(__func__, [&] {
    Scheduler& scheduler = Driver::running().scheduler();
    require_output(priority, "priority");
    auto lock = scheduler.lock();
    *priority = scheduler.find_stream(stream)->priority;
    return AXON_SUCCESS;
  });
}

axon_status axon_stream_launch_host_function(axon_stream stream, axon_host_function task) {
  // Owned from the first line, so `release` runs exactly once on every path.
  OwnedTask owned(task);
  return guarded_call(__func__, [&] {
    Driver& driver = Driver::running();
    if (task.run == nullptr) fail(AXON_ERROR_INVALID_VALUE, "expected a task with a non-null run function, got null");
    submit_work(driver, stream, QueueItem{std::move(owned), 0, nullptr}, Completion::asynchronous);
    return AXON_SUCCESS;
  });
}

axon_status axon_stream_query(axon_stream stream) {
  return guarded_call(__func__, [&] {
    Scheduler& scheduler = Driver::running().scheduler();
    auto lock = scheduler.lock();
    axon_stream_object* target = scheduler.find_stream(stream);
    throw_pending_error(target);
    return target->completed == target->submitted ? AXON_SUCCESS : AXON_ERROR_NOT_READY;
  });
}

axon_status axon_stream_synchronize(axon_stream stream) {
  return guarded_call(__func__, [&] {
    Scheduler& scheduler = Driver::running().scheduler();
    auto lock = scheduler.lock();
    axon_stream_object* target = scheduler.find_stream(stream);
    const std::uint64_t ticket = target->submitted;
    scheduler.wait_until(lock, [&] { return !scheduler.is_live_stream(target) || target->completed >= ticket; });
    if (scheduler.is_live_stream(target)) throw_pending_error(target);
    return AXON_SUCCESS;
  });
}

}  // namespace axon::emulated::entry_points
