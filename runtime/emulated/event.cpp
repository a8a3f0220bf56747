// Entry points (driver_api.cpp puts them in the table): event calls: lifetime, record, wait, query, synchronize,
// timing.

#include <chrono>
#include <memory>

#include "axon/event.h"
#include "boundary.h"
#include "driver.h"
#include "entry_points.h"
#include "submission.h"

using namespace axon::emulated;

namespace {

void require_timing_recording(const EventState& state, const char* role) {
  if (!state.timing) {
    fail(AXON_ERROR_INVALID_EVENT_STATE, role, " event was created without AXON_EVENT_TIMING");
  }
  if (state.recorded == 0) fail(AXON_ERROR_INVALID_EVENT_STATE, role, " event was never recorded");
}

}  // namespace

namespace axon::emulated::entry_points {

axon_status axon_event_create(unsigned flags, axon_event* event) {
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

axon_status axon_event_destroy(axon_event event) {
  return guarded_call(__func__, [&] {
    Scheduler& scheduler = Driver::running().scheduler();
    auto lock = scheduler.lock();
    scheduler.destroy_event(scheduler.find_event(event));
    return AXON_SUCCESS;
  });
}

axon_status axon_event_record(axon_event event, axon_stream stream) {
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
      if (!driver.config().launch_blocking) return AXON_SUCCESS;
    }
    // Launch-blocking: wait for this recording like any other submission.
    auto lock = scheduler.lock();
    scheduler.wait_until(lock, [&] { return state->recording_complete(recording); });
    return AXON_SUCCESS;
  });
}

axon_status axon_event_query(axon_event event) {
  return guarded_call(__func__, [&] {
    Scheduler& scheduler = Driver::running().scheduler();
    auto lock = scheduler.lock();
    const EventState& state = *scheduler.find_event(event)->state;
    return state.recording_complete(state.recorded) ? AXON_SUCCESS : AXON_ERROR_NOT_READY;
  });
}

axon_status axon_event_synchronize(axon_event event) {
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

axon_status axon_stream_wait_event(axon_stream stream, axon_event event) {
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
    submit_work(driver, stream, QueueItem{EventWaitMarker{state, recording}, 0, nullptr}, Completion::asynchronous);
    return AXON_SUCCESS;
  });
}

axon_status axon_event_elapsed_time(axon_event start, axon_event end, float* milliseconds) {
  return guarded_call(__func__, [&] {
    Scheduler& scheduler = Driver::running().scheduler();
    require_output(milliseconds, "milliseconds");
    auto lock = scheduler.lock();
    const EventState& start_state = *scheduler.find_event(start)->state;
    const EventState& end_state = *scheduler.find_event(end)->state;
    require_timing_recording(start_state, "start");
    require_timing_recording(end_state, "end");
    if (!start_state.recording_complete(start_state.recorded) || !end_state.recording_complete(end_state.recorded)) {
      return AXON_ERROR_NOT_READY;
    }
    *milliseconds =
        std::chrono::duration<float, std::milli>(end_state.newest_completion_time - start_state.newest_completion_time)
            .count();
    return AXON_SUCCESS;
  });
}

axon_status axon_event_get_device(axon_event event, int* device) {
  return guarded_call(__func__, [&] {
    Scheduler& scheduler = Driver::running().scheduler();
    require_output(device, "device");
    auto lock = scheduler.lock();
    *device = scheduler.find_event(event)->state->device;
    return AXON_SUCCESS;
  });
}

}  // namespace axon::emulated::entry_points
