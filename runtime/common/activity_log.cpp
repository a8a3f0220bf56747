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
  bool expected = false;
  if (!recording_.compare_exchange_strong(expected, true)) {
    fail(AXON_ERROR_INVALID_VALUE, "activity recording is already on (axon_activity_start called twice)");
  }
}

void ActivityLog::stop() {
  bool expected = true;
  if (!recording_.compare_exchange_strong(expected, false)) {
    fail(AXON_ERROR_INVALID_VALUE, "activity recording is not on (axon_activity_stop without axon_activity_start)");
  }
}

void ActivityLog::mark(ActivityMark& mark) const {
  if (!recording()) return;
  mark.marked = true;
  mark.correlation = thread_correlation;
  if (!thread_label.empty()) mark.name = thread_label;
}

std::int64_t ActivityLog::now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
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
  if (records_.size() >= kCapacity) {
    ++dropped_;
    return;
  }
  records_.push_back(record);
}

std::size_t ActivityLog::collect(axon_activity_record* records, std::size_t capacity, std::size_t* dropped) {
  std::lock_guard<std::mutex> guard(mutex_);
  const std::size_t count = std::min(capacity, records_.size());
  std::copy_n(records_.begin(), count, records);
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
