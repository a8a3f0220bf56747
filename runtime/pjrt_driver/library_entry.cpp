// The PJRT driver as a library of its own (libaxon_driver_pjrt.so), loaded by
// path (AXON_DRIVER=/path/to/libaxon_driver_pjrt.so) as any chip's driver is.

#include "axon/driver_api.h"
#include "entry_points.h"

extern "C" __attribute__((visibility("default"))) const axon_driver_api* axon_driver_get_api(void) {
  return axon::pjrt_driver::driver_api();
}
