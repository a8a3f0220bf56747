// Driver: the process-wide emulated driver, created lazily on the first call.
//
// The singleton is intentionally leaked: it is never destroyed by static
// destructors, so a process that exits without axon_runtime_shutdown() (with
// worker threads alive and memory mapped) ends cleanly, and late frees from
// other static destructors still find it.
//
// Thread-safety: every method is thread-safe.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "axon/status.h"
#include "config.h"
#include "device_arena.h"
#include "imported_host_registry.h"
#include "pinned_host_registry.h"
#include "scheduler.h"

namespace axon::emulated {

class Driver {
 public:
  // The running driver. Throws the initialization failure if configuration or
  // setup failed, and DriverError(AXON_ERROR_SHUT_DOWN) after shutdown.
  static Driver& running();

  // For frees, which succeed silently after shutdown: the driver, or null
  // once shut down. Still throws an initialization failure.
  static Driver* running_unless_shut_down();

  // Whether axon_runtime_shutdown() has been called; never initializes.
  static bool is_shut_down();

  const DriverConfig& config() const { return config_; }
  bool launch_blocking() const { return config_.launch_blocking; }
  int device_count() const { return config_.device_count; }

  // Throws DriverError(AXON_ERROR_INVALID_DEVICE) for an out-of-range index.
  void require_device(int device) const;

  DeviceArena& arena(int device) { return *arenas_[static_cast<std::size_t>(device)]; }

  // The arena whose device address range contains `pointer`, or null.
  DeviceArena* arena_owning(const void* pointer);

  common::PinnedHostRegistry& pinned_host() { return pinned_host_; }
  ImportedHostRegistry& imported_host() { return imported_host_; }
  common::Scheduler& scheduler() { return *scheduler_; }

  // Drains all work and stops the workers; later calls see AXON_ERROR_SHUT_DOWN.
  void shutdown();

 private:
  Driver();
  static Driver& instance();

  DriverConfig config_;
  axon_status initialization_status_ = AXON_SUCCESS;
  std::string initialization_message_;
  std::vector<std::unique_ptr<DeviceArena>> arenas_;
  common::PinnedHostRegistry pinned_host_;
  ImportedHostRegistry imported_host_;
  std::unique_ptr<common::Scheduler> scheduler_;
  std::mutex shutdown_mutex_;
};

}  // namespace axon::emulated
