// The pinned host memory calls (axon/memory.h), shared by the drivers that
// keep pinned memory in a PinnedHostRegistry. `Driver` provides static
// running() and running_unless_shut_down() (null after shutdown) and
// PinnedHostRegistry& pinned_host().
#pragma once

#include "axon/memory.h"
#include "boundary.h"
#include "pinned_host_registry.h"

namespace axon::common {

template <typename Driver>
struct PinnedHostCalls {
  static axon_status axon_host_allocate(size_t bytes, void** ptr) {
    return guarded_call(__func__, [&] {
      Driver& driver = Driver::running();
      require_output(ptr, "ptr");
      if (bytes == 0) fail(AXON_ERROR_INVALID_VALUE, "expected bytes > 0, got 0");
      *ptr = driver.pinned_host().allocate(bytes);
      return AXON_SUCCESS;
    });
  }

  static axon_status axon_host_free(void* ptr) {
    return guarded_call(__func__, [&] {
      Driver* driver = Driver::running_unless_shut_down();
      if (driver == nullptr || ptr == nullptr) return AXON_SUCCESS;
      driver->pinned_host().release(ptr);
      return AXON_SUCCESS;
    });
  }

  static axon_status axon_host_pointer_is_pinned(const void* ptr, int* pinned) {
    return guarded_call(__func__, [&] {
      Driver& driver = Driver::running();
      require_output(pinned, "pinned");
      *pinned = driver.pinned_host().find_allocation(ptr) ? 1 : 0;
      return AXON_SUCCESS;
    });
  }
};

}  // namespace axon::common
