// Finding the device memory a pointer range lies in, for copies and launches.
#pragma once

#include <cstddef>
#include <optional>

#include "driver.h"

namespace axon::emulated {

struct DeviceRange {
  int device = -1;
  void* host_address = nullptr;  // where the worker reads or writes the bytes
};

// The device memory holding [pointer, pointer + bytes), or nullopt if
// `pointer` is not device memory. Throws AXON_ERROR_INVALID_POINTER for a
// pointer into a device's address range outside a live allocation, and
// AXON_ERROR_INVALID_VALUE for a range that overruns its allocation or import.
// `role` names the pointer in messages ("source", "binding 2").
std::optional<DeviceRange> find_device_range(Driver& driver, const void* pointer, std::size_t bytes, const char* role);

}  // namespace axon::emulated
