// ActivityLog: marking queued work, and the records of finished marked work.

#include "activity_log.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "driver_error.h"

namespace axon::common {
namespace {

// The queueing thread's tag and label (axon_activity_set_correlation/_label).
thread_local std::uint64_t thread_correlation = 0;
thread_local std::string thread_label;

}  // namespace

void ActivityLog::start() {
  std::lock_guard<std::mutex> guard(mutex_);
  if (recording()) {
    fail(AXON_ERROR_INVALID_VALUE, "activity recording is already on (axon_activity_start called twice)");
  }
  records_.clear();
  dropped_ = 0;
  recording_number_.fetch_add(1, std::memory_order_relaxed);
  recording_.store(true, std::memory_order_relaxed);
}

void ActivityLog::stop() {
  std::lock_guard<std::mutex> guard(mutex_);
  if (!recording()) {
    fail(AXON_ERROR_INVALID_VALUE, "activity recording is not on (axon_activity_stop without axon_activity_start)");
  }
  recording_.store(false, std::memory_order_relaxed);
}

void ActivityLog::mark(ActivityMark& mark) const {
  if (!recording()) return;
  mark.marked = true;
  mark.recording = recording_number_.load(std::memory_order_relaxed);
  mark.correlation = thread_correlation;
  if (!thread_label.empty()) mark.name = thread_label;
}

std::int64_t ActivityLog::now_ns() {
  using std::chrono::duration_cast;
  using std::chrono::nanoseconds;
  // Realtime once, then steady time since: records line up with the host's
  // trace and durations stay true across a wall-clock step.
  static const auto steady_origin = std::chrono::steady_clock::now();
  static const std::int64_t realtime_origin =
      duration_cast<nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  return realtime_origin + duration_cast<nanoseconds>(std::chrono::steady_clock::now() - steady_origin).count();
}

void ActivityLog::add(const ActivityMark& mark, int device, int stream_number, axon_status status,
                      std::int64_t start_ns, std::int64_t end_ns) {
  axon_activity_record record{};
  record.kind = mark.kind;
  record.device = device;
  record.stream_number = stream_number;
  record.status = status;
  record.correlation = mark.correlation;
  record.start_ns = start_ns;
  record.end_ns = end_ns;
  record.bytes = mark.bytes;
  const std::size_t length = std::min(mark.name.size(), std::size_t{AXON_ACTIVITY_NAME_CAPACITY - 1});
  std::memcpy(record.name, mark.name.data(), length);
  record.name[length] = '\0';
  std::lock_guard<std::mutex> guard(mutex_);
  if (mark.recording != recording_number_.load(std::memory_order_relaxed)) return;  // an earlier recording's work
  if (records_.size() >= kCapacity) {
    ++dropped_;
    return;
  }
  records_.push_back(record);
}

std::size_t ActivityLog::collect(void* records, std::size_t record_size, std::size_t capacity, std::size_t* dropped) {
  std::lock_guard<std::mutex> guard(mutex_);
  const std::size_t count = std::min(capacity, records_.size());
  auto* out = static_cast<unsigned char*>(records);
  const std::size_t written = std::min(record_size, sizeof(axon_activity_record));
  for (std::size_t index = 0; index < count; ++index) {
    unsigned char* slot = out + index * record_size;
    std::memcpy(slot, &records_[index], written);
    std::memset(slot + written, 0, record_size - written);  // fields this driver predates
  }
  records_.erase(records_.begin(), records_.begin() + static_cast<std::ptrdiff_t>(count));
  if (dropped != nullptr) *dropped = dropped_;
  dropped_ = 0;
  return count;
}

void ActivityLog::set_correlation(std::uint64_t correlation) { thread_correlation = correlation; }

void ActivityLog::set_label(const char* label) {
  if (label == nullptr) {
    thread_label.clear();
  } else {
    thread_label = label;
  }
}

}  // namespace axon::common
