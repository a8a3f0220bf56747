// ActivityLog: the records behind axon/activity.h, shared by every driver
// built on the Scheduler.
//
// The Scheduler marks an item when it is queued while recording is on
// (mark), and adds a record when a marked item finishes (add). The calling
// thread's correlation tag and label live here too, since they are read at
// queue time on that thread.
//
// Thread-safety: everything is thread-safe; `recording()` is a relaxed read,
// so an item queued while start or stop is in progress may go either way.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>

#include "axon/activity.h"

namespace axon::common {

// axon_activity_record as the boundary first defined it (through `name`):
// the smallest record a caller may collect into.
constexpr std::size_t kFirstActivityRecordSize = sizeof(axon_activity_record);

// What a queued item says about itself for its record, filled when queued.
struct ActivityMark {
  bool marked = false;          // queued while recording; only marked items get a record
  std::uint64_t recording = 0;  // which recording marked it: a later one drops its record
  axon_activity_kind kind = AXON_ACTIVITY_HOST_FUNCTION;
  std::uint64_t bytes = 0;
  std::string name;  // the driver's own name for the work (an entry point), or the thread's label
  std::uint64_t correlation = 0;
};

class ActivityLog {
 public:
  // At least this many records wait for collect; later ones are dropped.
  static constexpr std::size_t kCapacity = 1 << 18;

  // Begins a new recording, discarding uncollected records; throws
  // AXON_ERROR_INVALID_VALUE when already recording.
  void start();
  void stop();  // throws AXON_ERROR_INVALID_VALUE when not recording
  bool recording() const { return recording_.load(std::memory_order_relaxed); }

  // Marks `mark` with the calling thread's tag and label, if recording.
  void mark(ActivityMark& mark) const;

  // The clock for records: realtime nanoseconds, advanced by the steady clock
  // (a step of the wall clock does not make a duration negative).
  static std::int64_t now_ns();
  void add(const ActivityMark& mark, int device, int stream_number, axon_status status, std::int64_t start_ns,
           std::int64_t end_ns);

  // axon_activity_collect's work: `record_size`-byte records into `records`.
  std::size_t collect(void* records, std::size_t record_size, std::size_t capacity, std::size_t* dropped);

  static void set_correlation(std::uint64_t correlation);
  static void set_label(const char* label);

 private:
  std::atomic<bool> recording_{false};
  std::atomic<std::uint64_t> recording_number_{0};  // of the current (or last) recording
  std::mutex mutex_;
  std::deque<axon_activity_record> records_;
  std::size_t dropped_ = 0;
};

}  // namespace axon::common
