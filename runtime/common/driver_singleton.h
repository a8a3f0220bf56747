// DriverSingleton<Derived>: what makes a driver class the process's one
// driver (CRTP: `class Driver : public common::DriverSingleton<Driver>`).
//
// The driver is created lazily by the first call and intentionally leaked: it
// is never destroyed by static destructors, so a process that exits without
// axon_runtime_shutdown() (worker threads alive, device memory mapped, a
// plugin's client live) ends cleanly, and late frees from other static
// destructors still find it.
//
// Initialization runs exactly once per process. A failure there is remembered
// and reported by every later call with the same status and detail, rather
// than retried.
//
// A child forked from a process whose driver started has the parent's device
// state but none of its worker threads (nor a plugin's), and possibly locks
// held by threads that no longer exist: it refuses the devices, as CUDA does.
//
// The state (shut down, forked child) is per driver type, so two drivers in
// one binary never see each other's.
//
// `Derived` provides: a private default constructor that calls initialize()
// (and befriends DriverSingleton<Derived>), Scheduler& scheduler() and
// int device_count() const.
//
// Thread-safety: every method is thread-safe.
#pragma once

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <new>
#include <string>

#include "axon/status.h"
#include "driver_error.h"

namespace axon::common {

template <typename Derived>
class DriverSingleton {
 public:
  // The running driver. Throws the initialization failure, or
  // DriverError(AXON_ERROR_SHUT_DOWN) after shutdown and in forked children.
  static Derived& running() {
    Derived& driver = instance();
    driver.throw_initialization_failure();
    if (forked_child_.load(std::memory_order_acquire)) {
      fail(AXON_ERROR_SHUT_DOWN,
           "this process was forked from one that had started the axon runtime; a forked child cannot use the "
           "parent's devices (start subprocesses with the 'spawn' method, e.g. "
           "torch.multiprocessing.set_start_method('spawn'))");
    }
    if (shut_down_.load(std::memory_order_acquire)) {
      fail(AXON_ERROR_SHUT_DOWN, "the runtime has been shut down (axon_runtime_shutdown); no more calls are accepted");
    }
    return driver;
  }

  // For frees, which succeed silently after shutdown: the driver, or null
  // once shut down. Still throws an initialization failure.
  static Derived* running_unless_shut_down() {
    if (shut_down_.load(std::memory_order_acquire)) return nullptr;
    Derived& driver = instance();
    driver.throw_initialization_failure();
    return &driver;
  }

  // Whether axon_runtime_shutdown() has been called; never initializes.
  static bool is_shut_down() { return shut_down_.load(std::memory_order_acquire); }

  // Throws DriverError(AXON_ERROR_INVALID_DEVICE) for an out-of-range index.
  void require_device(int device) const {
    const int count = static_cast<const Derived&>(*this).device_count();
    if (device < 0 || device >= count) {
      fail(AXON_ERROR_INVALID_DEVICE, "invalid device ", device, ": expected 0 <= device < ", count);
    }
  }

  // Drains all work and stops the workers; later calls see AXON_ERROR_SHUT_DOWN.
  void shutdown() {
    std::lock_guard<std::mutex> guard(shutdown_mutex_);
    if (shut_down_.load(std::memory_order_acquire)) return;
    // The scheduler stops accepting work first, then the flag refuses the
    // other calls; frees racing with the drain are harmless.
    static_cast<Derived&>(*this).scheduler().shutdown();
    shut_down_.store(true, std::memory_order_release);
  }

 protected:
  DriverSingleton() = default;
  ~DriverSingleton() = default;
  DriverSingleton(const DriverSingleton&) = delete;
  DriverSingleton& operator=(const DriverSingleton&) = delete;

  // Runs `setup` (the derived constructor's work) and, once it succeeded,
  // installs the fork handlers. A failure is caught and kept as the
  // initialization failure; returns whether setup succeeded.
  template <typename Setup>
  bool initialize(Setup&& setup) {
    try {
      setup();
      pthread_atfork(&drain_before_fork, nullptr, &refuse_devices_in_forked_child);
      return true;
    } catch (const DriverError& error) {
      initialization_status_ = error.status();
      initialization_message_ = error.what();
    } catch (const std::bad_alloc&) {
      initialization_status_ = AXON_ERROR_OUT_OF_MEMORY;
      initialization_message_ = "driver initialization failed: out of host memory";
    } catch (const std::exception& error) {
      initialization_status_ = AXON_ERROR_SYSTEM;
      initialization_message_ = describe("driver initialization failed: ", error.what());
    }
    return false;
  }

 private:
  static Derived& instance() {
    static Derived* const instance = new Derived();  // leaked on purpose, see above
    return *instance;
  }

  void throw_initialization_failure() const {
    if (initialization_status_ != AXON_SUCCESS) throw DriverError(initialization_status_, initialization_message_);
  }

  // Lets queued work finish before fork() copies the process, bounded so a
  // task waiting on the forking thread cannot hang the fork.
  static void drain_before_fork() {
    if (shut_down_.load(std::memory_order_acquire)) return;
    try {
      Derived* driver = running_unless_shut_down();
      if (driver != nullptr) driver->scheduler().wait_until_idle_for(std::chrono::seconds(10));
    } catch (...) {
      // Forking must not fail because the driver could not drain.
    }
  }

  static void refuse_devices_in_forked_child() {
    forked_child_.store(true, std::memory_order_release);
    shut_down_.store(true, std::memory_order_release);
  }

  static inline std::atomic<bool> shut_down_{false};
  static inline std::atomic<bool> forked_child_{false};

  axon_status initialization_status_ = AXON_SUCCESS;
  std::string initialization_message_;
  std::mutex shutdown_mutex_;
};

}  // namespace axon::common
