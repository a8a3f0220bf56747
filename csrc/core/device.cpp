#include "core/device.h"

#include "core/check.h"

namespace axon {
namespace {
thread_local c10::DeviceIndex thread_current_device = 0;
}  // namespace

c10::DeviceIndex device_count() noexcept {
  int count = 0;
  if (axon_device_count(&count) != AXON_SUCCESS) {
    return 0;
  }
  return static_cast<c10::DeviceIndex>(count);
}

void check_device_index(int64_t index) {
  int count = 0;
  // Surfaces driver failures (shutdown, malformed configuration) by name.
  AXON_CHECK(axon_device_count(&count), "using an axon device");
  TORCH_CHECK_INDEX(
      index >= 0 && index < count,
      "[axon] invalid device index ", index, ": expected 0 <= index < ", count,
      " (AXON_DEVICE_COUNT sets the number of devices)");
}

c10::DeviceIndex current_device() {
  return thread_current_device;
}

void set_current_device(c10::DeviceIndex index) {
  check_device_index(index);
  thread_current_device = index;
}

c10::DeviceIndex resolve_device_index(c10::DeviceIndex index) {
  if (index < 0) {
    return current_device();
  }
  check_device_index(index);
  return index;
}

}  // namespace axon
