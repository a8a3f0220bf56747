// extern "C" device memory calls: allocate, free, pointer queries.

#include "axon/memory.h"
#include "boundary.h"
#include "driver.h"

using axon::emulated::DeviceArena;
using axon::emulated::Driver;
using axon::emulated::fail;
using axon::emulated::guarded_call;
using axon::emulated::require_output;

namespace {

// The arena and live allocation containing `pointer`, or AXON_ERROR_INVALID_POINTER.
DeviceArena& arena_of_live_allocation(Driver& driver, const void* pointer) {
  DeviceArena* arena = driver.arena_owning(pointer);
  if (arena == nullptr) {
    fail(AXON_ERROR_INVALID_POINTER, "pointer ", pointer, " is not device memory of this driver");
  }
  if (!arena->find_allocation(pointer)) {
    fail(AXON_ERROR_INVALID_POINTER, "pointer ", pointer, " lies in device ", arena->device(),
         "'s address range but not inside a live allocation (freed?)");
  }
  return *arena;
}

}  // namespace

extern "C" axon_status axon_memory_allocate(int device, size_t bytes, void** ptr) {
  return guarded_call(__func__, [&] {
    Driver& driver = Driver::running();
    driver.require_device(device);
    require_output(ptr, "ptr");
    if (bytes == 0) fail(AXON_ERROR_INVALID_VALUE, "expected bytes > 0, got 0");
    *ptr = driver.arena(device).allocate(bytes);
    return AXON_SUCCESS;
  });
}

extern "C" axon_status axon_memory_free(void* ptr) {
  return guarded_call(__func__, [&] {
    Driver* driver = Driver::running_unless_shut_down();
    if (driver == nullptr || ptr == nullptr) return AXON_SUCCESS;
    DeviceArena* arena = driver->arena_owning(ptr);
    if (arena == nullptr) {
      fail(AXON_ERROR_INVALID_POINTER, "pointer ", ptr,
           " was not returned by axon_memory_allocate (not device memory of this driver)");
    }
    arena->release(ptr);
    return AXON_SUCCESS;
  });
}

extern "C" axon_status axon_memory_pointer_device(const void* ptr, int* device) {
  return guarded_call(__func__, [&] {
    Driver& driver = Driver::running();
    require_output(device, "device");
    *device = arena_of_live_allocation(driver, ptr).device();
    return AXON_SUCCESS;
  });
}

extern "C" axon_status axon_memory_used(int device, size_t* bytes) {
  return guarded_call(__func__, [&] {
    Driver& driver = Driver::running();
    driver.require_device(device);
    require_output(bytes, "bytes");
    *bytes = driver.arena(device).used_bytes();
    return AXON_SUCCESS;
  });
}

extern "C" axon_status axon_memory_host_view(const void* ptr, void** host_ptr) {
  return guarded_call(__func__, [&] {
    Driver& driver = Driver::running();
    require_output(host_ptr, "host_ptr");
    *host_ptr = arena_of_live_allocation(driver, ptr).host_view(ptr);
    return AXON_SUCCESS;
  });
}
