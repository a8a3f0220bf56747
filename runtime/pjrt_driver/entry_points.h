// The PJRT driver's table, and its own implementation of the boundary's
// calls: common::DriverEntryPoints<Driver>'s members, defined in devices.cpp,
// memory.cpp, memory_copy.cpp and executable.cpp, and reached only through
// the table (driver_api.cpp).
#pragma once

#include "axon/driver_api.h"
#include "driver_entry_points.h"

namespace axon::pjrt_driver {

class Driver;

// The table, for library_entry.cpp.
const axon_driver_api* driver_api();

using EntryPoints = common::DriverEntryPoints<Driver>;

}  // namespace axon::pjrt_driver
