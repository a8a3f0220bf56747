// Shared state behind an axon_event handle.
//
// Queue items hold the state through shared_ptr, so destroying the handle
// while recordings are still queued is safe: those recordings still complete
// and streams waiting on them still wake.
//
// Thread-safety: every field is guarded by the Scheduler's mutex.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <set>

namespace axon::common {

struct EventState {
  explicit EventState(bool timing) : timing(timing) {}

  // Recording `number` (1, 2, ...) has been reached, or was never queued.
  bool recording_complete(std::uint64_t number) const { return pending_recordings.count(number) == 0; }

  void complete_recording(std::uint64_t number, std::chrono::steady_clock::time_point when) {
    pending_recordings.erase(number);
    // Recordings on different streams may complete out of order; the
    // timestamp belongs to the newest one.
    if (number > newest_completed) {
      newest_completed = number;
      newest_completion_time = when;
    }
  }

  const bool timing;
  std::uint64_t recorded = 0;  // number of the newest recording, 0 if never recorded
  std::set<std::uint64_t> pending_recordings;
  std::uint64_t newest_completed = 0;
  std::chrono::steady_clock::time_point newest_completion_time;
  int device = -1;  // device of the stream of the newest recording
};

}  // namespace axon::common

// The object behind the opaque axon_event handle.
struct axon_event_object {
  std::shared_ptr<axon::common::EventState> state;
};
