// Reading the emulated driver's configuration from the environment.

#include "config.h"

#include "environment.h"

using namespace axon::common;

namespace axon::emulated {

DriverConfig read_config_from_environment() {
  DriverConfig config;
  if (const auto count = device_count_from_environment()) config.device_count = *count;
  if (const auto bytes = device_memory_from_environment()) config.device_memory = *bytes;
  read_flag_from_environment("AXON_LAUNCH_BLOCKING", &config.launch_blocking);
  read_flag_from_environment("AXON_MEMORY_PROTECT", &config.memory_protect);
  read_flag_from_environment("AXON_EMULATED_PRIVATE_MEMORY", &config.private_memory);
  return config;
}

}  // namespace axon::emulated
