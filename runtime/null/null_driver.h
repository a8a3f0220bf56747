// The null driver's table (see README.md).
#pragma once

#include "axon/driver_api.h"

namespace axon::null_driver {

const axon_driver_api* driver_api();

}  // namespace axon::null_driver
