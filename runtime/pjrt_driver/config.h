// Configuration of the PJRT driver, read once from the environment when the
// driver initializes lazily (README.md lists the variables).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace axon::pjrt_driver {

struct DriverConfig {
  std::string plugin_path;                   // AXON_PJRT_PLUGIN
  std::optional<int> device_count;           // AXON_DEVICE_COUNT: at most this many of the plugin's devices
  std::optional<std::size_t> device_memory;  // AXON_DEVICE_MEMORY: capacity per device
  bool launch_blocking = false;              // AXON_LAUNCH_BLOCKING
};

// Capacity of a device when neither AXON_DEVICE_MEMORY nor the plugin says.
constexpr std::size_t kDefaultDeviceMemory = std::size_t{8} << 30;

// Throws DriverError(AXON_ERROR_INVALID_VALUE) naming a malformed variable,
// or AXON_PJRT_PLUGIN when it is not set.
DriverConfig read_config_from_environment();

}  // namespace axon::pjrt_driver
