// Driver: the process-wide PJRT driver, created lazily on the first call.
//
// Initialization loads the plugin (AXON_PJRT_PLUGIN), creates its client and
// takes its devices; a failure there (no such file, not a PJRT plugin, an
// incompatible PJRT version, a client that cannot be created) is remembered
// and reported by every later call with the same status and detail
// (common/driver_singleton.h, which also owns shutdown and fork refusal). Like
// the emulated driver's, the singleton is leaked on purpose: destroying a PJRT
// client from a static destructor races with the plugin's own teardown.
//
// Thread-safety: every method is thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "axon/device.h"
#include "axon/status.h"
#include "config.h"
#include "device_memory.h"
#include "driver_entry_points.h"
#include "driver_singleton.h"
#include "pinned_host_registry.h"
#include "pjrt_client.h"
#include "scheduler.h"
#include "submission.h"

namespace axon::pjrt_driver {

class Driver : public common::DriverSingleton<Driver> {
 public:
  int device_count() const { return static_cast<int>(device_names_.size()); }
  bool launch_blocking() const { return config_.launch_blocking; }

  // What a device is (common/device_calls.h; capability() in devices.cpp).
  // "Axon PJRT cpu cpu:0"
  const std::string& device_name(int device) const { return device_names_[static_cast<std::size_t>(device)]; }
  bool memory_protected() const { return true; }  // the host never touches a PJRT buffer
  // The PJRT calls this driver makes report no core count; 1 is the lower bound every device meets.
  int compute_units(int /*device*/) const { return 1; }
  int capability(axon_capability capability) const;

  pjrt::PjrtClient& client() { return *client_; }
  DeviceMemory& memory() { return *memory_; }
  // The device's memory accounting (common/device_calls.h).
  std::size_t capacity(int device) { return memory_->capacity(device); }
  std::size_t used_bytes(int device) { return memory_->used(device); }

  // Device memory for common/memory_calls.h (bytes > 0); the queue_ calls are
  // in memory_copy.cpp.
  void* allocate(int device, std::size_t bytes) { return memory_->allocate(device, bytes); }
  void queue_copy(void* dst, const void* src, std::size_t bytes, axon_stream stream, common::Completion completion);
  void queue_set(void* dst, int value, std::size_t bytes, axon_stream stream);
  common::PinnedHostRegistry& pinned_host() { return pinned_host_; }
  common::Scheduler& scheduler() { return *scheduler_; }

 private:
  friend class common::DriverSingleton<Driver>;
  Driver();

  DriverConfig config_;
  std::unique_ptr<pjrt::PjrtClient> client_;
  std::vector<std::string> device_names_;
  std::unique_ptr<DeviceMemory> memory_;
  common::PinnedHostRegistry pinned_host_;
  std::unique_ptr<common::Scheduler> scheduler_;
};

// This driver's own entry points, defined in memory.cpp and executable.cpp.
using EntryPoints = common::DriverEntryPoints<Driver>;

}  // namespace axon::pjrt_driver

AXON_DECLARE_DRIVER_ENTRY_POINTS(axon::pjrt_driver::Driver)
