// The device calls (axon/device.h; axon_memory_used from axon/memory.h),
// shared by every driver built on DriverSingleton and the Scheduler:
// driver_table() puts DeviceCalls<ItsDriver>::... in its table. What differs
// between drivers' devices, the driver answers itself.
//
// `Driver` provides what DriverSingleton gives it (running(),
// running_unless_shut_down(), is_shut_down(), require_device(), shutdown()),
// plus int device_count() const, Scheduler& scheduler(),
// bool launch_blocking() const, and its devices' description:
//   std::string device_name(int device) const   ("Axon Emulated Device")
//   bool memory_protected() const               (host code cannot touch device memory)
//   int capability(axon_capability) const       (axon_device_get_capability's answer, 0 or 1)
//   std::size_t capacity(int device), std::size_t used_bytes(int device)
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>

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

  static axon_status axon_device_get_properties(int device, axon_device_properties* properties) {
    return guarded_call(__func__, [&] {
      Driver& driver = Driver::running();
      driver.require_device(device);
      require_output(properties, "properties");
      axon_device_properties result{};
      std::strncpy(result.name, driver.device_name(device).c_str(), sizeof(result.name) - 1);
      result.total_memory = driver.capacity(device);
      result.stream_priority_low = kStreamPriorityLeastUrgent;
      result.stream_priority_high = kStreamPriorityMostUrgent;
      result.launch_blocking = driver.launch_blocking() ? 1 : 0;
      result.memory_protected = driver.memory_protected() ? 1 : 0;
      result.compute_units = std::max(1, driver.compute_units(device));
      *properties = result;
      return AXON_SUCCESS;
    });
  }

  static axon_status axon_device_get_capability(int device, axon_capability capability, int* value) {
    return guarded_call(__func__, [&] {
      Driver& driver = Driver::running();
      driver.require_device(device);
      require_output(value, "value");
      *value = driver.capability(capability);
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
