// The PJRT driver's table (axon/driver_api.h), slot by slot as
// common/driver_table.h lays it out.

#include "driver.h"
#include "driver_table.h"
#include "entry_points.h"

namespace axon::pjrt_driver {

const axon_driver_api* driver_api() {
  static const axon_driver_api table = common::driver_table<Driver>("pjrt");
  return &table;
}

}  // namespace axon::pjrt_driver
