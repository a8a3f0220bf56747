// Reading the PJRT driver's configuration from the environment.

#include "config.h"

#include "driver_error.h"
#include "environment.h"

using namespace axon::common;

namespace axon::pjrt_driver {

DriverConfig read_config_from_environment() {
  DriverConfig config;
  const auto path = environment_value("AXON_PJRT_PLUGIN");
  if (!path || path->empty()) {
    fail(AXON_ERROR_INVALID_VALUE,
         "driver initialization failed: the PJRT driver needs AXON_PJRT_PLUGIN, the path of a PJRT plugin "
         "(a libpjrt_*.so exporting GetPjrtApi, e.g. XLA's CPU plugin from the fastatomstruct-xla-cpu wheel)");
  }
  config.plugin_path = *path;
  config.device_count = device_count_from_environment();
  config.device_memory = device_memory_from_environment();
  read_flag_from_environment("AXON_LAUNCH_BLOCKING", &config.launch_blocking);
  return config;
}

}  // namespace axon::pjrt_driver
