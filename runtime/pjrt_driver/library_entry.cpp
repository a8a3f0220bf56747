// The PJRT driver as a library of its own (libaxon_driver_pjrt.so), loaded by
// path (AXON_DRIVER=/path/to/libaxon_driver_pjrt.so) as any chip's driver is.
// Its one exported symbol returns its table, slot by slot as
// common/driver_table.h lays it out.

#include "axon/driver_api.h"
#include "driver.h"
#include "driver_table.h"

extern "C" __attribute__((visibility("default"))) const axon_driver_api* axon_driver_get_api(void) {
  static const axon_driver_api table = axon::common::driver_table<axon::pjrt_driver::Driver>("pjrt");
  return &table;
}
