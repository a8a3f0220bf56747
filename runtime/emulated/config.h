// Configuration of the emulated driver, read once from the environment when
// the driver initializes lazily (README.md lists the variables).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace axon::emulated {

struct DriverConfig {
  int device_count = 4;
  std::size_t device_memory = std::size_t{8} << 30;  // per-device capacity
  bool launch_blocking = false;
  bool memory_protect = false;
  // AXON_EMULATED_PRIVATE_MEMORY=1: the capability queries say device memory
  // is neither host-addressable nor importable, as on a chip with its own
  // memory (the views still work, for Axon's host-execution seam only).
  bool private_memory = false;
};

// Reads AXON_DEVICE_COUNT, AXON_DEVICE_MEMORY, AXON_LAUNCH_BLOCKING and
// AXON_MEMORY_PROTECT. Throws DriverError(AXON_ERROR_INVALID_VALUE) naming the
// variable and its value when one is malformed.
DriverConfig read_config_from_environment();

}  // namespace axon::emulated
