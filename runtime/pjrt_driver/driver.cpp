// Driver: lazy initialization (plugin, client, devices), device lookup, shutdown.

#include "driver.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>

#include "driver_error.h"

using namespace axon::common;

namespace axon::pjrt_driver {
namespace {

std::atomic<bool> shut_down_flag{false};
std::atomic<bool> forked_child_flag{false};

// As in the emulated driver: a forked child has none of the parent's worker
// threads (nor the plugin's), so it refuses the devices; the parent first lets
// queued work finish, bounded so a task waiting on the forking thread cannot
// hang the fork.
void drain_before_fork() {
  if (shut_down_flag.load(std::memory_order_acquire)) return;
  try {
    Driver* driver = Driver::running_unless_shut_down();
    if (driver != nullptr) driver->scheduler().wait_until_idle_for(std::chrono::seconds(10));
  } catch (...) {
  }
}

void refuse_devices_in_forked_child() {
  forked_child_flag.store(true, std::memory_order_release);
  shut_down_flag.store(true, std::memory_order_release);
}

}  // namespace

Driver::Driver() {
  try {
    config_ = read_config_from_environment();
    int count = 0;
    if (config_.device_count != 0) {
      try {
        client_ = std::make_unique<pjrt::PjrtClient>(config_.plugin_path, config_.device_count);
      } catch (const std::exception& error) {
        fail(AXON_ERROR_SYSTEM, "driver initialization failed: ", error.what());
      }
      count = static_cast<int>(client_->device_count());
      if (config_.device_count) count = std::min(count, *config_.device_count);
    }
    std::vector<std::size_t> capacities;
    for (int device = 0; device < count; ++device) {
      device_names_.push_back("Axon PJRT " + client_->device_description(static_cast<std::size_t>(device)));
      const auto limit = client_->device_memory_limit(static_cast<std::size_t>(device));
      capacities.push_back(
          config_.device_memory.value_or(limit ? static_cast<std::size_t>(*limit) : kDefaultDeviceMemory));
    }
    if (client_) memory_ = std::make_unique<DeviceMemory>(*client_, capacities);
    scheduler_ = std::make_unique<Scheduler>(count);
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
         "parent's devices (start subprocesses with the 'spawn' method)");
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
  if (device < 0 || device >= device_count()) {
    fail(AXON_ERROR_INVALID_DEVICE, "invalid device ", device, ": expected 0 <= device < ", device_count());
  }
}

void Driver::shutdown() {
  std::lock_guard<std::mutex> guard(shutdown_mutex_);
  if (shut_down_flag.load(std::memory_order_acquire)) return;
  scheduler_->shutdown();
  shut_down_flag.store(true, std::memory_order_release);
}

}  // namespace axon::pjrt_driver
