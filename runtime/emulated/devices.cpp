// What an emulated device can do (axon_device_get_capability's answers); the
// device calls themselves are common/device_calls.h's.

#include "driver.h"

namespace axon::emulated {

int Driver::capability(axon_capability capability) const {
  switch (capability) {
    case AXON_CAPABILITY_HOST_ADDRESSABLE_MEMORY:  // through axon_memory_host_view, also when protected
    case AXON_CAPABILITY_IMPORT_HOST_MEMORY:
      return config_.private_memory ? 0 : 1;
    case AXON_CAPABILITY_HOST_FUNCTIONS:
    case AXON_CAPABILITY_EXECUTABLES:  // AXON_FORMAT_HOST_SHARED_OBJECT
      return 1;
    default:
      return 0;
  }
}

}  // namespace axon::emulated
