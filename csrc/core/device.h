// Device enumeration and the calling thread's current device.
#pragma once

#include <c10/core/Device.h>

#include "axon/device.h"

namespace axon {

// Number of axon devices; 0 if the driver cannot report (never throws).
c10::DeviceIndex device_count() noexcept;

// Throws IndexError naming the index and the valid range, and the driver's
// error for a runtime that is shut down or was started by a parent process.
// Called by every kernel before it queues work, so the count is remembered
// once the driver has given it, until forget_device_count() or a fork.
void check_device_index(int64_t index);

// Makes check_device_index ask the driver again (after axon_runtime_shutdown).
void forget_device_count();

// The calling thread's current device (0 until set), as torch.cuda does.
c10::DeviceIndex current_device();
void set_current_device(c10::DeviceIndex index);

// Whether the driver gives `device` an optional ability (axon/device.h). The
// answer is fixed for the driver's lifetime, so it is asked once per device and
// capability and remembered; throws if the driver cannot answer.
bool driver_capability(c10::DeviceIndex device, axon_capability capability);

// Resolves -1 ("current") to the current device and validates the rest.
c10::DeviceIndex resolve_device_index(c10::DeviceIndex index);

}  // namespace axon
