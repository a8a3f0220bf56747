// The activity calls (axon/activity.h), shared by every driver built on the
// Scheduler: driver_table.h puts ActivityCalls<ItsDriver>::... in its table.
//
// `Driver` provides static Driver& running() and Scheduler& scheduler().
#pragma once

#include <cstdint>

#include "axon/activity.h"
#include "boundary.h"
#include "scheduler.h"

namespace axon::common {

template <typename Driver>
struct ActivityCalls {
  static axon_status axon_activity_start() {
    return guarded_call(__func__, [] {
      Driver::running().scheduler().activity().start();
      return AXON_SUCCESS;
    });
  }

  static axon_status axon_activity_stop() {
    return guarded_call(__func__, [] {
      Driver::running().scheduler().activity().stop();
      return AXON_SUCCESS;
    });
  }

  // The tag and the label belong to the thread, not to a driver instance:
  // setting them needs no running driver.
  static axon_status axon_activity_set_correlation(std::uint64_t correlation) {
    return guarded_call(__func__, [&] {
      ActivityLog::set_correlation(correlation);
      return AXON_SUCCESS;
    });
  }

  static axon_status axon_activity_set_label(const char* label) {
    return guarded_call(__func__, [&] {
      ActivityLog::set_label(label);
      return AXON_SUCCESS;
    });
  }

  static axon_status axon_activity_collect(void* records, size_t record_size, size_t capacity, size_t* count,
                                           size_t* dropped) {
    return guarded_call(__func__, [&] {
      require_output(count, "count");
      if (records == nullptr && capacity > 0) {
        fail(AXON_ERROR_INVALID_VALUE, "expected room for ", capacity, " records, got a null array");
      }
      if (record_size < kFirstActivityRecordSize) {
        fail(AXON_ERROR_INVALID_VALUE, "record_size ", record_size, " is smaller than the first record version (",
             kFirstActivityRecordSize, " bytes)");
      }
      *count = Driver::running().scheduler().activity().collect(records, record_size, capacity, dropped);
      return AXON_SUCCESS;
    });
  }
};

}  // namespace axon::common
