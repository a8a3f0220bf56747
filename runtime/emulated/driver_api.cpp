// The emulated driver's table (axon/driver_api.h), slot by slot as
// common/driver_table.h lays it out.

#include "driver.h"
#include "driver_table.h"
#include "entry_points.h"

namespace axon::emulated {

const axon_driver_api* driver_api() {
  static const axon_driver_api table = common::driver_table<Driver>("emulated");
  return &table;
}

}  // namespace axon::emulated
