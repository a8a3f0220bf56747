// Entry points (common/driver_table.h puts them in the table): device memory calls: import, free, pointer queries
// (allocation and use are common/memory_calls.h's and common/device_calls.h's).

#include <cstdint>

#include "axon/memory.h"
#include "boundary.h"
#include "driver.h"

using namespace axon::common;

using axon::emulated::DeviceArena;
using axon::emulated::Driver;
using axon::emulated::EntryPoints;

namespace {

// Where a live device pointer's bytes are: an arena allocation or an import.
struct LiveDeviceMemory {
  int device = -1;
  void* host_view = nullptr;
};

// The live allocation or import containing `pointer`, or AXON_ERROR_INVALID_POINTER.
LiveDeviceMemory find_live_device_memory(Driver& driver, const void* pointer) {
  if (DeviceArena* arena = driver.arena_owning(pointer)) {
    if (!arena->find_allocation(pointer)) {
      fail(AXON_ERROR_INVALID_POINTER, "pointer ", pointer, " lies in device ", arena->device(),
           "'s address range but not inside a live allocation (freed?)");
    }
    return {arena->device(), arena->host_view(pointer)};
  }
  if (const auto imported = driver.imported_host().find(pointer)) {
    return {imported->device, const_cast<void*>(pointer)};  // imports have no separate view
  }
  fail(AXON_ERROR_INVALID_POINTER, "pointer ", pointer,
       " is not device memory of this driver (not allocated or imported, or already freed)");
}

void require_importable_range(Driver& driver, const void* host_ptr, size_t bytes) {
  if (host_ptr == nullptr) fail(AXON_ERROR_INVALID_VALUE, "expected a non-null host_ptr, got null");
  if (bytes == 0) fail(AXON_ERROR_INVALID_VALUE, "expected bytes > 0, got 0");
  const std::uintptr_t begin = reinterpret_cast<std::uintptr_t>(host_ptr);
  if (bytes > UINTPTR_MAX - begin) {
    fail(AXON_ERROR_INVALID_VALUE, "host range of ", bytes, " bytes at ", host_ptr, " wraps around the address space");
  }
  for (int device = 0; device < driver.device_count(); ++device) {
    if (driver.arena(device).overlaps_mappings(host_ptr, bytes)) {
      fail(AXON_ERROR_INVALID_VALUE, "host range [", host_ptr, ", +", bytes, " bytes) overlaps the memory of device ",
           device, "; only host memory owned outside the driver can be imported");
    }
  }
}

}  // namespace

template <>
axon_status EntryPoints::axon_memory_import_host(int device, void* host_ptr, size_t bytes, void** device_ptr) {
  return guarded_call(__func__, [&] {
    Driver& driver = Driver::running();
    driver.require_device(device);
    require_output(device_ptr, "device_ptr");
    require_importable_range(driver, host_ptr, bytes);
    DeviceArena& arena = driver.arena(device);
    arena.charge_import(bytes);
    try {
      driver.imported_host().insert(static_cast<char*>(host_ptr), bytes, device);
    } catch (...) {
      arena.discharge_import(bytes);  // a refused import leaves nothing counted
      throw;
    }
    *device_ptr = host_ptr;
    return AXON_SUCCESS;
  });
}

template <>
axon_status EntryPoints::axon_memory_free(void* ptr) {
  return guarded_call(__func__, [&] {
    Driver* driver = Driver::running_unless_shut_down();
    if (driver == nullptr || ptr == nullptr) return AXON_SUCCESS;
    if (DeviceArena* arena = driver->arena_owning(ptr)) {
      arena->release(ptr);
      return AXON_SUCCESS;
    }
    if (const auto imported = driver->imported_host().erase(ptr)) {
      driver->arena(imported->device).discharge_import(imported->size);
      return AXON_SUCCESS;
    }
    fail(AXON_ERROR_INVALID_POINTER, "pointer ", ptr,
         " was not returned by axon_memory_allocate or axon_memory_import_host (not device memory of "
         "this driver, or already freed)");
  });
}

template <>
axon_status EntryPoints::axon_memory_pointer_device(const void* ptr, int* device) {
  return guarded_call(__func__, [&] {
    Driver& driver = Driver::running();
    require_output(device, "device");
    *device = find_live_device_memory(driver, ptr).device;
    return AXON_SUCCESS;
  });
}

template <>
axon_status EntryPoints::axon_memory_host_view(const void* ptr, void** host_ptr) {
  return guarded_call(__func__, [&] {
    Driver& driver = Driver::running();
    require_output(host_ptr, "host_ptr");
    *host_ptr = find_live_device_memory(driver, ptr).host_view;
    return AXON_SUCCESS;
  });
}
