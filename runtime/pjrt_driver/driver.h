// Driver: the process-wide PJRT driver, created lazily on the first call.
//
// Initialization loads the plugin (AXON_PJRT_PLUGIN), creates its client and
// takes its devices; a failure there (no such file, not a PJRT plugin, an
// incompatible PJRT version, a client that cannot be created) is remembered
// and reported by every later call with the same status and detail. Like the
// emulated driver's, the singleton is leaked on purpose: destroying a PJRT
// client from a static destructor races with the plugin's own teardown.
//
// Thread-safety: every method is thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "axon/status.h"
#include "config.h"
#include "device_memory.h"
#include "pinned_host_registry.h"
#include "pjrt_client.h"
#include "scheduler.h"

namespace axon::pjrt_driver {

class Driver {
 public:
  // The running driver. Throws the initialization failure, or
  // DriverError(AXON_ERROR_SHUT_DOWN) after shutdown and in forked children.
  static Driver& running();
  // For frees, which succeed silently after shutdown: null once shut down.
  static Driver* running_unless_shut_down();
  static bool is_shut_down();

  int device_count() const { return static_cast<int>(device_names_.size()); }
  // Throws DriverError(AXON_ERROR_INVALID_DEVICE) for an out-of-range index.
  void require_device(int device) const;
  bool launch_blocking() const { return config_.launch_blocking; }
  // "Axon PJRT cpu cpu:0"
  const std::string& device_name(int device) const { return device_names_[static_cast<std::size_t>(device)]; }

  pjrt::PjrtClient& client() { return *client_; }
  DeviceMemory& memory() { return *memory_; }
  common::PinnedHostRegistry& pinned_host() { return pinned_host_; }
  common::Scheduler& scheduler() { return *scheduler_; }

  void shutdown();

 private:
  Driver();
  static Driver& instance();

  DriverConfig config_;
  axon_status initialization_status_ = AXON_SUCCESS;
  std::string initialization_message_;
  std::unique_ptr<pjrt::PjrtClient> client_;
  std::vector<std::string> device_names_;
  std::unique_ptr<DeviceMemory> memory_;
  common::PinnedHostRegistry pinned_host_;
  std::unique_ptr<common::Scheduler> scheduler_;
  std::mutex shutdown_mutex_;
};

}  // namespace axon::pjrt_driver
