// Entry points (driver_api.cpp puts them in the table): the device calls that say what a PJRT device is:
// properties and capabilities (the rest are common/device_calls.h).

#include <cstring>

#include "axon/device.h"
#include "boundary.h"
#include "driver.h"
#include "entry_points.h"

using namespace axon::common;
using axon::pjrt_driver::Driver;
using axon::pjrt_driver::EntryPoints;

template <>
axon_status EntryPoints::axon_device_get_properties(int device, axon_device_properties* properties) {
  return guarded_call(__func__, [&] {
    Driver& driver = Driver::running();
    driver.require_device(device);
    require_output(properties, "properties");
    axon_device_properties result{};
    std::strncpy(result.name, driver.device_name(device).c_str(), sizeof(result.name) - 1);
    result.total_memory = driver.memory().capacity(device);
    result.stream_priority_low = kStreamPriorityLeastUrgent;
    result.stream_priority_high = kStreamPriorityMostUrgent;
    result.launch_blocking = driver.launch_blocking() ? 1 : 0;
    result.memory_protected = 1;  // the host never touches a PJRT buffer
    *properties = result;
    return AXON_SUCCESS;
  });
}

template <>
axon_status EntryPoints::axon_device_get_capability(int device, axon_capability capability, int* value) {
  return guarded_call(__func__, [&] {
    Driver::running().require_device(device);
    require_output(value, "value");
    switch (capability) {
      case AXON_CAPABILITY_HOST_FUNCTIONS:  // run by the device's worker, in stream order
      case AXON_CAPABILITY_EXECUTABLES:     // AXON_FORMAT_STABLEHLO, compiled by the plugin
        *value = 1;
        break;
      default:  // device memory is PJRT buffers: neither host-addressable nor importable
        *value = 0;
    }
    return AXON_SUCCESS;
  });
}
