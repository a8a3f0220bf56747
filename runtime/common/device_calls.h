// The device calls that do not depend on what a device is (axon/device.h:
// count, synchronization, memory accounting, shutdown; axon_memory_used from
// axon/memory.h), shared by every driver built on DriverSingleton and the
// Scheduler: driver_table() puts DeviceCalls<ItsDriver>::... in its table.
//
// `Driver` provides what DriverSingleton gives it (running(),
// running_unless_shut_down(), is_shut_down(), require_device(), shutdown()),
// plus int device_count() const, Scheduler& scheduler(), and the device's
// memory accounting: std::size_t capacity(int device) and
// std::size_t used_bytes(int device).
#pragma once

#include <cstddef>

#include "axon/device.h"
#include "axon/memory.h"
#include "boundary.h"
#include "scheduler.h"

namespace axon::common {

template <typename Driver>
struct DeviceCalls {
  static axon_status axon_device_count(int* count) {
    return guarded_call(__func__, [&] {
      require_output(count, "count");
      *count = Driver::running().device_count();
      return AXON_SUCCESS;
    });
  }

  static axon_status axon_device_memory_info(int device, size_t* free_bytes, size_t* total_bytes) {
    return guarded_call(__func__, [&] {
      Driver& driver = Driver::running();
      driver.require_device(device);
      require_output(free_bytes, "free_bytes");
      require_output(total_bytes, "total_bytes");
      const std::size_t capacity = driver.capacity(device);
      *free_bytes = capacity - driver.used_bytes(device);
      *total_bytes = capacity;
      return AXON_SUCCESS;
    });
  }

  static axon_status axon_device_synchronize(int device) {
    return guarded_call(__func__, [&] {
      Driver& driver = Driver::running();
      driver.require_device(device);
      driver.scheduler().synchronize_device(device);
      return AXON_SUCCESS;
    });
  }

  static axon_status axon_runtime_shutdown(void) {
    return guarded_call(__func__, [&] {
      Driver* driver = Driver::running_unless_shut_down();
      if (driver != nullptr) driver->shutdown();
      return AXON_SUCCESS;
    });
  }

  static int axon_runtime_is_shut_down(void) { return Driver::is_shut_down() ? 1 : 0; }

  static axon_status axon_memory_used(int device, size_t* bytes) {
    return guarded_call(__func__, [&] {
      Driver& driver = Driver::running();
      driver.require_device(device);
      require_output(bytes, "bytes");
      *bytes = driver.used_bytes(device);
      return AXON_SUCCESS;
    });
  }
};

}  // namespace axon::common
