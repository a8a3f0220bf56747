#include "core/device.h"

#include <pthread.h>

#include <atomic>

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

namespace {

// The driver's device count once it has answered; -1 until then, after
// forget_device_count(), and in a forked child (which the driver refuses by
// name, so the child must ask it). Asking through the boundary on every
// kernel call was a few percent of a tiny operator's time.
std::atomic<int> known_device_count{-1};

void forget_device_count_in_child() { known_device_count.store(-1, std::memory_order_relaxed); }

}  // namespace

void forget_device_count() { known_device_count.store(-1, std::memory_order_release); }

void check_device_index(int64_t index) {
  int count = known_device_count.load(std::memory_order_acquire);
  if (count < 0) {
    // Surfaces driver failures (shutdown, forked child, malformed configuration) by name.
    AXON_CHECK(axon_device_count(&count), "using an axon device");
    static const bool watching_forks = pthread_atfork(nullptr, nullptr, &forget_device_count_in_child) == 0;
    if (watching_forks) known_device_count.store(count, std::memory_order_release);
  }
  TORCH_CHECK_INDEX(index >= 0 && index < count, "[axon] invalid device index ", index, ": expected 0 <= index < ",
                    count, " (AXON_DEVICE_COUNT sets the number of devices)");
}

bool driver_capability(c10::DeviceIndex device, axon_capability capability) {
  // Remembered answers: 0 not asked yet, 1 no, 2 yes. Devices and capabilities
  // past the table are asked every time (a racing first ask is harmless: both
  // threads store the same answer).
  constexpr int kDevices = 64;
  constexpr int kCapabilities = 16;
  static std::atomic<int8_t> answers[kDevices][kCapabilities];  // zero-initialized
  const bool cached = device >= 0 && device < kDevices && capability >= 0 && capability < kCapabilities;
  if (cached) {
    const int8_t known = answers[device][capability].load(std::memory_order_relaxed);
    if (known != 0) return known == 2;
  }
  int value = 0;
  AXON_CHECK(axon_device_get_capability(device, capability, &value), "asking the driver for a capability");
  if (cached) answers[device][capability].store(value != 0 ? 2 : 1, std::memory_order_relaxed);
  return value != 0;
}

c10::DeviceIndex current_device() { return thread_current_device; }

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
