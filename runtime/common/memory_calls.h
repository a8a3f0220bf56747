// The device memory calls whose checks are the same on every driver
// (axon/memory.h: allocate, copies, sets), shared by the drivers built on
// DriverSingleton and the Scheduler: driver_table() puts
// MemoryCalls<ItsDriver>::... in its table. Where the bytes live and how they
// move, the driver does itself.
//
// `Driver` provides what DriverSingleton gives it (running(),
// require_device()), Scheduler& scheduler(), and:
//   void* allocate(int device, std::size_t bytes)      (bytes > 0)
//   void queue_copy(void* dst, const void* src, std::size_t bytes, axon_stream stream, Completion completion)
//   void queue_set(void* dst, int value, std::size_t bytes, axon_stream stream)
// The queue_ calls (bytes > 0) classify and check the pointers, then submit
// the work (submission.h); a pageable source is staged before they return.
#pragma once

#include <cstddef>

#include "axon/memory.h"
#include "boundary.h"
#include "scheduler.h"
#include "submission.h"

namespace axon::common {

template <typename Driver>
struct MemoryCalls {
  static axon_status axon_memory_allocate(int device, size_t bytes, void** ptr) {
    return guarded_call(__func__, [&] {
      Driver& driver = Driver::running();
      driver.require_device(device);
      require_output(ptr, "ptr");
      if (bytes == 0) fail(AXON_ERROR_INVALID_VALUE, "expected bytes > 0, got 0");
      *ptr = driver.allocate(device, bytes);
      return AXON_SUCCESS;
    });
  }

  static axon_status axon_memory_copy_async(void* dst, const void* src, size_t bytes, axon_stream stream) {
    return guarded_call(__func__, [&] { return copy(dst, src, bytes, stream, Completion::asynchronous); });
  }

  static axon_status axon_memory_copy(void* dst, const void* src, size_t bytes, axon_stream stream) {
    return guarded_call(__func__, [&] { return copy(dst, src, bytes, stream, Completion::wait); });
  }

  static axon_status axon_memory_set_async(void* dst, int value, size_t bytes, axon_stream stream) {
    return guarded_call(__func__, [&] {
      Driver& driver = Driver::running();
      if (bytes == 0) {
        require_live_stream(driver, stream);
      } else {
        driver.queue_set(dst, value, bytes, stream);
      }
      return AXON_SUCCESS;
    });
  }

 private:
  static axon_status copy(void* dst, const void* src, size_t bytes, axon_stream stream, Completion completion) {
    Driver& driver = Driver::running();
    if (bytes == 0) {
      require_live_stream(driver, stream);
    } else {
      driver.queue_copy(dst, src, bytes, stream, completion);
    }
    return AXON_SUCCESS;
  }

  // Nothing to move, but the stream must still be a live one.
  static void require_live_stream(Driver& driver, axon_stream stream) {
    auto lock = driver.scheduler().lock();
    driver.scheduler().find_stream(stream);
  }
};

}  // namespace axon::common
