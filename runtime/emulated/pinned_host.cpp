// Entry points (driver_api.cpp puts them in the table): pinned host memory calls.

#include "axon/memory.h"
#include "boundary.h"
#include "driver.h"
#include "entry_points.h"

using axon::emulated::Driver;
using axon::emulated::fail;
using axon::emulated::guarded_call;
using axon::emulated::require_output;

namespace axon::emulated::entry_points {

axon_status axon_host_allocate(size_t bytes, void** ptr) {
  return guarded_call(__func__, [&] {
    Driver& driver = Driver::running();
    require_output(ptr, "ptr");
    if (bytes == 0) fail(AXON_ERROR_INVALID_VALUE, "expected bytes > 0, got 0");
    *ptr = driver.pinned_host().allocate(bytes);
    return AXON_SUCCESS;
  });
}

axon_status axon_host_free(void* ptr) {
  return guarded_call(__func__, [&] {
    Driver* driver = Driver::running_unless_shut_down();
    if (driver == nullptr || ptr == nullptr) return AXON_SUCCESS;
    driver->pinned_host().release(ptr);
    return AXON_SUCCESS;
  });
}

axon_status axon_host_pointer_is_pinned(const void* ptr, int* pinned) {
  return guarded_call(__func__, [&] {
    Driver& driver = Driver::running();
    require_output(pinned, "pinned");
    *pinned = driver.pinned_host().find_allocation(ptr) ? 1 : 0;
    return AXON_SUCCESS;
  });
}

}  // namespace axon::emulated::entry_points
