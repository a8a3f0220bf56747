// Driver: lazy initialization (configuration, device arenas, scheduler) and
// device lookup; the singleton's lifetime is common/driver_singleton.h's.

#include "driver.h"

using namespace axon::common;

namespace axon::emulated {

Driver::Driver() {
  const bool initialized = initialize([this] {
    config_ = read_config_from_environment();
    for (int device = 0; device < config_.device_count; ++device) {
      arenas_.push_back(std::make_unique<DeviceArena>(device, config_.device_memory, config_.memory_protect));
    }
    scheduler_ = std::make_unique<Scheduler>(config_.device_count);
  });
  if (!initialized) {  // a failed driver keeps no half-built devices
    arenas_.clear();
    scheduler_.reset();
  }
}

DeviceArena* Driver::arena_owning(const void* pointer) {
  for (auto& arena : arenas_) {
    if (arena->owns_address(pointer)) return arena.get();
  }
  return nullptr;
}

}  // namespace axon::emulated
