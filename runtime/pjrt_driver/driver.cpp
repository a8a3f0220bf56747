// Driver: lazy initialization (plugin, client, devices); the singleton's
// lifetime is common/driver_singleton.h's.

#include "driver.h"

#include <algorithm>

#include "driver_error.h"

using namespace axon::common;

namespace axon::pjrt_driver {

Driver::Driver() {
  initialize([this] {
    config_ = read_config_from_environment();
    int count = 0;
    if (config_.device_count != 0) {
      try {
        client_ = std::make_unique<pjrt::PjrtClient>(config_.plugin_path, config_.device_count);
      } catch (const std::exception& error) {
        fail(AXON_ERROR_SYSTEM, "driver initialization failed: ", error.what());
      }
      count = static_cast<int>(client_->device_count());
      if (config_.device_count) count = std::min(count, *config_.device_count);
    }
    std::vector<std::size_t> capacities;
    for (int device = 0; device < count; ++device) {
      device_names_.push_back("Axon PJRT " + client_->device_description(static_cast<std::size_t>(device)));
      const auto limit = client_->device_memory_limit(static_cast<std::size_t>(device));
      capacities.push_back(
          config_.device_memory.value_or(limit ? static_cast<std::size_t>(*limit) : kDefaultDeviceMemory));
    }
    if (client_) memory_ = std::make_unique<DeviceMemory>(*client_, capacities);
    scheduler_ = std::make_unique<Scheduler>(count);
  });
}

}  // namespace axon::pjrt_driver
