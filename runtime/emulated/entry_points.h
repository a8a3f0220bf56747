// The emulated driver's table, and its own implementation of the boundary's
// calls: common::DriverEntryPoints<Driver>'s members, defined in devices.cpp,
// memory.cpp, memory_copy.cpp and executable.cpp. They reach callers only
// through the table (driver_api.cpp) that the loader forwards the public
// axon_* calls to.
#pragma once

#include "axon/driver_api.h"
#include "driver_entry_points.h"

namespace axon::emulated {

class Driver;

// The table, for the loader (built in as AXON_DRIVER=emulated).
const axon_driver_api* driver_api();

using EntryPoints = common::DriverEntryPoints<Driver>;

}  // namespace axon::emulated
