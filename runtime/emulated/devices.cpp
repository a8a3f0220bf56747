// Entry points (driver_api.cpp puts them in the table): the device calls that say what an emulated device is:
// properties and capabilities (the rest are common/device_calls.h).

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "axon/device.h"
#include "boundary.h"
#include "driver.h"
#include "entry_points.h"

using namespace axon::common;

using axon::emulated::Driver;
using axon::emulated::EntryPoints;

template <>
axon_status EntryPoints::axon_device_get_properties(int device, axon_device_properties* properties) {
  return guarded_call(__func__, [&] {
    Driver& driver = Driver::running();
    driver.require_device(device);
    require_output(properties, "properties");
    axon_device_properties result{};
    std::strncpy(result.name, "Axon Emulated Device", sizeof(result.name) - 1);
    result.total_memory = driver.arena(device).capacity();
    result.stream_priority_low = axon::common::kStreamPriorityLeastUrgent;
    result.stream_priority_high = axon::common::kStreamPriorityMostUrgent;
    result.launch_blocking = driver.config().launch_blocking ? 1 : 0;
    result.memory_protected = driver.config().memory_protect ? 1 : 0;
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
      case AXON_CAPABILITY_HOST_ADDRESSABLE_MEMORY:  // through axon_memory_host_view, also when protected
      case AXON_CAPABILITY_IMPORT_HOST_MEMORY:
        *value = Driver::running().config().private_memory ? 0 : 1;
        break;
      case AXON_CAPABILITY_HOST_FUNCTIONS:
      case AXON_CAPABILITY_EXECUTABLES:  // AXON_FORMAT_HOST_SHARED_OBJECT
        *value = 1;
        break;
      default:
        *value = 0;
    }
    return AXON_SUCCESS;
  });
}
