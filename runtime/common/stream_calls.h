// The stream and event calls (axon/stream.h, axon/event.h), shared by every
// driver built on the Scheduler: driver_table.h puts StreamCalls<ItsDriver>::...
// in its table.
//
// `Driver` provides: static Driver& running() (throws the initialization
// failure, or AXON_ERROR_SHUT_DOWN), Scheduler& scheduler(),
// void require_device(int) const (throws AXON_ERROR_INVALID_DEVICE) and
// bool launch_blocking() const.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "axon/event.h"
#include "axon/stream.h"
#include "boundary.h"
#include "scheduler.h"
#include "submission.h"

namespace axon::common {

namespace stream_call_helpers {

// Returns the stream's pending error once, clearing it.
inline void throw_pending_error(axon_stream_object* stream) {
  if (!stream->pending_error) return;
  std::string message = std::move(stream->pending_error->message);
  const axon_status status = stream->pending_error->status;
  stream->pending_error.reset();
  throw DriverError(status, std::move(message));
}

inline void require_timing_recording(const EventState& state, const char* role) {
  if (!state.timing) {
    fail(AXON_ERROR_INVALID_EVENT_STATE, role, " event was created without AXON_EVENT_TIMING");
  }
  if (state.recorded == 0) fail(AXON_ERROR_INVALID_EVENT_STATE, role, " event was never recorded");
}

}  // namespace stream_call_helpers

template <typename Driver>
struct StreamCalls {
  static axon_status axon_stream_priority_range(int* least_urgent, int* most_urgent) {
    return guarded_call(__func__, [&] {
      Driver::running();
      require_output(least_urgent, "least_urgent");
      require_output(most_urgent, "most_urgent");
      *least_urgent = kStreamPriorityLeastUrgent;
      *most_urgent = kStreamPriorityMostUrgent;
      return AXON_SUCCESS;
    });
  }

  static axon_status axon_stream_create(int device, int priority, axon_stream* stream) {
    return guarded_call(__func__, [&] {
      Driver& driver = Driver::running();
      driver.require_device(device);
      require_output(stream, "stream");
      auto lock = driver.scheduler().lock();
      *stream = driver.scheduler().create_stream(device, priority);
      return AXON_SUCCESS;
    });
  }

  static axon_status axon_stream_destroy(axon_stream stream) {
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

  static axon_status axon_stream_get_default(int device, axon_stream* stream) {
    return guarded_call(__func__, [&] {
      Driver& driver = Driver::running();
      driver.require_device(device);
      require_output(stream, "stream");
      auto lock = driver.scheduler().lock();
      *stream = driver.scheduler().default_stream(device);
      return AXON_SUCCESS;
    });
  }

  static axon_status axon_stream_get_device(axon_stream stream, int* device) {
    return guarded_call(__func__, [&] {
      Scheduler& scheduler = Driver::running().scheduler();
      require_output(device, "device");
      auto lock = scheduler.lock();
      *device = scheduler.find_stream(stream)->device;
      return AXON_SUCCESS;
    });
  }

  static axon_status axon_stream_get_priority(axon_stream stream, int* priority) {
    return guarded_call(__func__, [&] {
      Scheduler& scheduler = Driver::running().scheduler();
      require_output(priority, "priority");
      auto lock = scheduler.lock();
      *priority = scheduler.find_stream(stream)->priority;
      return AXON_SUCCESS;
    });
  }

  static axon_status axon_stream_launch_host_function(axon_stream stream, axon_host_function task) {
    // Owned from the first line, so `release` runs exactly once on every path.
    OwnedTask owned(task);
    return guarded_call(__func__, [&] {
      Driver& driver = Driver::running();
      if (task.run == nullptr) fail(AXON_ERROR_INVALID_VALUE, "expected a task with a non-null run function, got null");
      submit_work(driver.scheduler(), driver.launch_blocking(), stream, QueueItem{std::move(owned), 0, nullptr},
                  Completion::asynchronous);
      return AXON_SUCCESS;
    });
  }

  static axon_status axon_stream_query(axon_stream stream) {
    return guarded_call(__func__, [&] {
      Scheduler& scheduler = Driver::running().scheduler();
      auto lock = scheduler.lock();
      axon_stream_object* target = scheduler.find_stream(stream);
      stream_call_helpers::throw_pending_error(target);
      return target->completed == target->submitted ? AXON_SUCCESS : AXON_ERROR_NOT_READY;
    });
  }

  static axon_status axon_stream_get_submission_count(axon_stream stream, std::uint64_t* count) {
    return guarded_call(__func__, [&] {
      Scheduler& scheduler = Driver::running().scheduler();
      require_output(count, "count");
      auto lock = scheduler.lock();
      *count = scheduler.find_stream(stream)->submitted;
      return AXON_SUCCESS;
    });
  }

  static axon_status axon_stream_run_host_function_if_idle(axon_stream stream, axon_host_function task) {
    return guarded_call(__func__, [&] {
      Scheduler& scheduler = Driver::running().scheduler();
      if (task.run == nullptr) fail(AXON_ERROR_INVALID_VALUE, "expected a task with a non-null run function, got null");
      auto lock = scheduler.lock();
      axon_stream_object* target = scheduler.find_stream(stream);
      if (!scheduler.idle_for_inline_work(target)) return AXON_ERROR_NOT_READY;
      // Under the lock: nothing queued meanwhile can start before it ends.
      std::string message;
      const axon_status status = run_host_task(task, &message);
      if (status != AXON_SUCCESS) fail(status, message);
      return AXON_SUCCESS;
    });
  }

  static axon_status axon_stream_synchronize(axon_stream stream) {
    return guarded_call(__func__, [&] {
      Scheduler& scheduler = Driver::running().scheduler();
      auto lock = scheduler.lock();
      axon_stream_object* target = scheduler.find_stream(stream);
      const std::uint64_t ticket = target->submitted;
      scheduler.wait_for_tickets(lock, {{target, ticket}});
      if (scheduler.is_live_stream(target)) stream_call_helpers::throw_pending_error(target);
      return AXON_SUCCESS;
    });
  }

  static axon_status axon_event_create(unsigned flags, axon_event* event) {
    return guarded_call(__func__, [&] {
      Scheduler& scheduler = Driver::running().scheduler();
      require_output(event, "event");
      if ((flags & ~static_cast<unsigned>(AXON_EVENT_TIMING)) != 0) {
        fail(AXON_ERROR_INVALID_VALUE, "expected flags to be a combination of AXON_EVENT_DEFAULT and ",
             "AXON_EVENT_TIMING, got ", flags);
      }
      auto lock = scheduler.lock();
      *event = scheduler.create_event((flags & AXON_EVENT_TIMING) != 0);
      return AXON_SUCCESS;
    });
  }

  static axon_status axon_event_destroy(axon_event event) {
    return guarded_call(__func__, [&] {
      Scheduler& scheduler = Driver::running().scheduler();
      auto lock = scheduler.lock();
      scheduler.destroy_event(scheduler.find_event(event));
      return AXON_SUCCESS;
    });
  }

  static axon_status axon_event_record(axon_event event, axon_stream stream) {
    return guarded_call(__func__, [&] {
      Driver& driver = Driver::running();
      Scheduler& scheduler = driver.scheduler();
      std::shared_ptr<EventState> state;
      std::uint64_t recording = 0;
      {
        auto lock = scheduler.lock();
        state = scheduler.find_event(event)->state;
        axon_stream_object* target = scheduler.find_stream(stream);
        recording = state->recorded + 1;
        // The marker cannot run before this lock is released, so the state is
        // updated after a successful submit and stays untouched on failure.
        scheduler.submit(target, QueueItem{EventRecordMarker{state, recording}, 0, nullptr});
        state->recorded = recording;
        state->pending_recordings.insert(recording);
        state->device = target->device;
        if (!driver.launch_blocking()) return AXON_SUCCESS;
      }
      // Launch-blocking: wait for this recording like any other submission.
      auto lock = scheduler.lock();
      scheduler.wait_until(lock, [&] { return state->recording_complete(recording); });
      return AXON_SUCCESS;
    });
  }

  static axon_status axon_event_query(axon_event event) {
    return guarded_call(__func__, [&] {
      Scheduler& scheduler = Driver::running().scheduler();
      auto lock = scheduler.lock();
      const EventState& state = *scheduler.find_event(event)->state;
      return state.recording_complete(state.recorded) ? AXON_SUCCESS : AXON_ERROR_NOT_READY;
    });
  }

  static axon_status axon_event_synchronize(axon_event event) {
    return guarded_call(__func__, [&] {
      Scheduler& scheduler = Driver::running().scheduler();
      auto lock = scheduler.lock();
      // Holding the state keeps it valid even if another thread destroys the handle.
      const std::shared_ptr<EventState> state = scheduler.find_event(event)->state;
      const std::uint64_t recording = state->recorded;
      scheduler.wait_until(lock, [&] { return state->recording_complete(recording); });
      return AXON_SUCCESS;
    });
  }

  static axon_status axon_stream_wait_event(axon_stream stream, axon_event event) {
    return guarded_call(__func__, [&] {
      Driver& driver = Driver::running();
      Scheduler& scheduler = driver.scheduler();
      std::shared_ptr<EventState> state;
      std::uint64_t recording = 0;
      {
        auto lock = scheduler.lock();
        state = scheduler.find_event(event)->state;
        scheduler.find_stream(stream);
        recording = state->recorded;
        // Nothing to wait for: never recorded, or that recording already done.
        if (state->recording_complete(recording)) return AXON_SUCCESS;
      }
      submit_work(driver.scheduler(), driver.launch_blocking(), stream,
                  QueueItem{EventWaitMarker{state, recording}, 0, nullptr}, Completion::asynchronous);
      return AXON_SUCCESS;
    });
  }

  static axon_status axon_event_elapsed_time(axon_event start, axon_event end, float* milliseconds) {
    return guarded_call(__func__, [&] {
      Scheduler& scheduler = Driver::running().scheduler();
      require_output(milliseconds, "milliseconds");
      auto lock = scheduler.lock();
      const EventState& start_state = *scheduler.find_event(start)->state;
      const EventState& end_state = *scheduler.find_event(end)->state;
      stream_call_helpers::require_timing_recording(start_state, "start");
      stream_call_helpers::require_timing_recording(end_state, "end");
      if (!start_state.recording_complete(start_state.recorded) || !end_state.recording_complete(end_state.recorded)) {
        return AXON_ERROR_NOT_READY;
      }
      *milliseconds = std::chrono::duration<float, std::milli>(end_state.newest_completion_time -
                                                               start_state.newest_completion_time)
                          .count();
      return AXON_SUCCESS;
    });
  }

  static axon_status axon_event_get_device(axon_event event, int* device) {
    return guarded_call(__func__, [&] {
      Scheduler& scheduler = Driver::running().scheduler();
      require_output(device, "device");
      auto lock = scheduler.lock();
      *device = scheduler.find_event(event)->state->device;
      return AXON_SUCCESS;
    });
  }
};

}  // namespace axon::common
