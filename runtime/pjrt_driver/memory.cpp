// Entry points (common/driver_table.h puts them in the table): device memory calls: free, pointer queries, and the two
// optional calls this driver refuses (host views and imports); allocation and use are common/memory_calls.h's and
// common/device_calls.h's.

#include <cstdint>

#include "axon/memory.h"
#include "boundary.h"
#include "driver.h"

using namespace axon::common;
using axon::pjrt_driver::DeviceRange;
using axon::pjrt_driver::Driver;
using axon::pjrt_driver::EntryPoints;

template <>
axon_status EntryPoints::axon_memory_free(void* ptr) {
  return guarded_call(__func__, [&] {
    Driver* driver = Driver::running_unless_shut_down();
    if (driver == nullptr || ptr == nullptr) return AXON_SUCCESS;
    driver->memory().free(ptr);
    return AXON_SUCCESS;
  });
}

template <>
axon_status EntryPoints::axon_memory_pointer_device(const void* ptr, int* device) {
  return guarded_call(__func__, [&] {
    Driver& driver = Driver::running();
    require_output(device, "device");
    const std::optional<DeviceRange> range = driver.memory().find(ptr, 0, "queried");
    if (!range) fail(AXON_ERROR_INVALID_POINTER, "pointer ", ptr, " is not device memory");
    *device = range->allocation->device;
    return AXON_SUCCESS;
  });
}

template <>
axon_status EntryPoints::axon_memory_host_view(const void* ptr, void** host_ptr) {
  return guarded_call(__func__, [&] {
    Driver::running();
    require_output(host_ptr, "host_ptr");
    fail(AXON_ERROR_NOT_SUPPORTED, "the PJRT driver's device memory is PJRT buffers, which host code cannot address (",
         ptr, "); copy the bytes instead");
    return AXON_SUCCESS;
  });
}

template <>
axon_status EntryPoints::axon_memory_import_host(int device, void* host_ptr, size_t bytes, void** device_ptr) {
  return guarded_call(__func__, [&] {
    Driver::running().require_device(device);
    require_output(device_ptr, "device_ptr");
    // The arguments are checked as any driver checks them before the refusal.
    if (host_ptr == nullptr) fail(AXON_ERROR_INVALID_VALUE, "expected a non-null host_ptr, got null");
    if (bytes == 0) fail(AXON_ERROR_INVALID_VALUE, "expected bytes > 0, got 0");
    if (reinterpret_cast<std::uintptr_t>(host_ptr) + bytes < reinterpret_cast<std::uintptr_t>(host_ptr)) {
      fail(AXON_ERROR_INVALID_VALUE, "the host range of ", bytes, " bytes at ", host_ptr,
           " wraps around the address space");
    }
    fail(AXON_ERROR_NOT_SUPPORTED, "the PJRT driver cannot adopt host memory (", host_ptr, ", ", bytes,
         " bytes) as device memory; copy it instead");
    return AXON_SUCCESS;
  });
}
