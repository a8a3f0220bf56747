// Driver: the process-wide emulated driver, created lazily on the first call
// and never destroyed (common/driver_singleton.h: running(), shutdown, fork
// refusal, the remembered initialization failure).
//
// Thread-safety: every method is thread-safe.
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "axon/device.h"
#include "axon/status.h"
#include "config.h"
#include "device_arena.h"
#include "driver_entry_points.h"
#include "driver_singleton.h"
#include "imported_host_registry.h"
#include "pinned_host_registry.h"
#include "scheduler.h"
#include "submission.h"

namespace axon::emulated {

class Driver : public common::DriverSingleton<Driver> {
 public:
  const DriverConfig& config() const { return config_; }
  bool launch_blocking() const { return config_.launch_blocking; }
  int device_count() const { return config_.device_count; }

  // What a device is (common/device_calls.h; capability() in devices.cpp).
  std::string device_name(int) const { return "Axon Emulated Device"; }
  bool memory_protected() const { return config_.memory_protect; }
  // Host kernels run multithreaded on the host's cores.
  int compute_units(int /*device*/) const { return static_cast<int>(std::thread::hardware_concurrency()); }
  int capability(axon_capability capability) const;

  DeviceArena& arena(int device) { return *arenas_[static_cast<std::size_t>(device)]; }
  // The device's memory accounting (common/device_calls.h), imports included.
  std::size_t capacity(int device) { return arena(device).capacity(); }
  std::size_t used_bytes(int device) { return arena(device).used_bytes(); }

  // The arena whose device address range contains `pointer`, or null.
  DeviceArena* arena_owning(const void* pointer);

  // Device memory for common/memory_calls.h (bytes > 0); the queue_ calls are
  // in memory_copy.cpp.
  void* allocate(int device, std::size_t bytes) { return arena(device).allocate(bytes); }
  void queue_copy(void* dst, const void* src, std::size_t bytes, axon_stream stream, common::Completion completion);
  void queue_set(void* dst, int value, std::size_t bytes, axon_stream stream);

  common::PinnedHostRegistry& pinned_host() { return pinned_host_; }
  ImportedHostRegistry& imported_host() { return imported_host_; }
  common::Scheduler& scheduler() { return *scheduler_; }

 private:
  friend class common::DriverSingleton<Driver>;
  Driver();

  DriverConfig config_;
  std::vector<std::unique_ptr<DeviceArena>> arenas_;
  common::PinnedHostRegistry pinned_host_;
  ImportedHostRegistry imported_host_;
  std::unique_ptr<common::Scheduler> scheduler_;
};

// This driver's own entry points, defined in memory.cpp and executable.cpp.
using EntryPoints = common::DriverEntryPoints<Driver>;

}  // namespace axon::emulated

AXON_DECLARE_DRIVER_ENTRY_POINTS(axon::emulated::Driver)
