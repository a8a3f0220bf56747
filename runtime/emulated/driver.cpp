// Driver: lazy initialization, device lookup, shutdown.

#include "driver.h"

#include <pthread.h>

#include <chrono>

#include "driver_error.h"

using namespace axon::common;

namespace axon::emulated {
namespace {

std::atomic<bool> shut_down_flag{false};
std::atomic<bool> forked_child_flag{false};

// A child forked from a process whose driver started has the parent's device
// mappings but none of its worker threads, and possibly locks held by threads
// that no longer exist: it must not touch the devices (as CUDA refuses too).
// Lets queued kernels finish before fork() copies the process (bounded, so a
// task waiting on the forking thread cannot hang the fork).
void drain_before_fork() {
  if (shut_down_flag.load(std::memory_order_acquire)) return;
  try {
    Driver* driver = Driver::running_unless_shut_down();
    if (driver != nullptr) driver->scheduler().wait_until_idle_for(std::chrono::seconds(10));
  } catch (...) {
    // Forking must not fail because the driver could not drain.
  }
}

void refuse_devices_in_forked_child() {
  forked_child_flag.store(true, std::memory_order_release);
  shut_down_flag.store(true, std::memory_order_release);
}

}  // namespace

Driver::Driver() {
  // A failure here is remembered and reported by every later call, rather
  // than retried: the configuration is read exactly once per process.
  try {
    config_ = read_config_from_environment();
    for (int device = 0; device < config_.device_count; ++device) {
      arenas_.push_back(std::make_unique<DeviceArena>(device, config_.device_memory, config_.memory_protect));
    }
    scheduler_ = std::make_unique<Scheduler>(config_.device_count);
    pthread_atfork(&drain_before_fork, nullptr, &refuse_devices_in_forked_child);
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
  if (initialization_status_ != AXON_SUCCESS) {
    arenas_.clear();
    scheduler_.reset();
  }
}

Driver& Driver::instance() {
  static Driver* const instance = new Driver();  // leaked on purpose, see driver.h
  return *instance;
}

Driver& Driver::running() {
  Driver& driver = instance();
  if (driver.initialization_status_ != AXON_SUCCESS) {
    throw DriverError(driver.initialization_status_, driver.initialization_message_);
  }
  if (forked_child_flag.load(std::memory_order_acquire)) {
    fail(AXON_ERROR_SHUT_DOWN,
         "this process was forked from one that had started the axon runtime; a forked child cannot use the "
         "parent's devices (start subprocesses with the 'spawn' method, e.g. "
         "torch.multiprocessing.set_start_method('spawn'))");
  }
  if (shut_down_flag.load(std::memory_order_acquire)) {
    fail(AXON_ERROR_SHUT_DOWN, "the runtime has been shut down (axon_runtime_shutdown); no more calls are accepted");
  }
  return driver;
}

Driver* Driver::running_unless_shut_down() {
  if (shut_down_flag.load(std::memory_order_acquire)) return nullptr;
  Driver& driver = instance();
  if (driver.initialization_status_ != AXON_SUCCESS) {
    throw DriverError(driver.initialization_status_, driver.initialization_message_);
  }
  return &driver;
}

bool Driver::is_shut_down() { return shut_down_flag.load(std::memory_order_acquire); }

void Driver::require_device(int device) const {
  if (device < 0 || device >= config_.device_count) {
    fail(AXON_ERROR_INVALID_DEVICE, "invalid device ", device, ": expected 0 <= device < ", config_.device_count);
  }
}

DeviceArena* Driver::arena_owning(const void* pointer) {
  for (auto& arena : arenas_) {
    if (arena->owns_address(pointer)) return arena.get();
  }
  return nullptr;
}

void Driver::shutdown() {
  std::lock_guard<std::mutex> guard(shutdown_mutex_);
  if (shut_down_flag.load(std::memory_order_acquire)) return;
  // The scheduler stops accepting work first, then the flag refuses the other
  // calls; frees racing with the drain are harmless.
  scheduler_->shutdown();
  shut_down_flag.store(true, std::memory_order_release);
}

}  // namespace axon::emulated
