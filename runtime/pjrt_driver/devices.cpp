// What a PJRT device can do (axon_device_get_capability's answers); the device
// calls themselves are common/device_calls.h's.

#include "driver.h"

namespace axon::pjrt_driver {

int Driver::capability(axon_capability capability) const {
  switch (capability) {
    case AXON_CAPABILITY_HOST_FUNCTIONS:  // run by the device's worker, in stream order
    case AXON_CAPABILITY_EXECUTABLES:     // AXON_FORMAT_STABLEHLO, compiled by the plugin
      return 1;
    default:  // device memory is PJRT buffers: neither host-addressable nor importable
      return 0;
  }
}

}  // namespace axon::pjrt_driver
