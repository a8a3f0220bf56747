#include "device_range.h"

#include "driver_error.h"

using namespace axon::common;

namespace axon::emulated {

std::optional<DeviceRange> find_device_range(Driver& driver, const void* pointer, std::size_t bytes, const char* role) {
  const char* address = static_cast<const char*>(pointer);
  if (DeviceArena* arena = driver.arena_owning(pointer)) {
    const auto allocation = arena->find_allocation(pointer);
    if (!allocation) {
      fail(AXON_ERROR_INVALID_POINTER, role, " pointer ", pointer, " lies in device ", arena->device(),
           "'s address range but not inside a live allocation (freed?)");
    }
    const std::size_t offset = static_cast<std::size_t>(address - allocation->base);
    if (bytes > allocation->size - offset) {
      fail(AXON_ERROR_INVALID_VALUE, role, " range of ", bytes, " bytes at offset ", offset, " overruns its ",
           allocation->size, "-byte allocation on device ", arena->device());
    }
    return DeviceRange{arena->device(), arena->host_view(pointer)};
  }
  // Before any pinned lookup by the caller: imported pinned memory is device memory now.
  if (const auto imported = driver.imported_host().find(pointer)) {
    const std::size_t offset = static_cast<std::size_t>(address - imported->base);
    if (bytes > imported->size - offset) {
      fail(AXON_ERROR_INVALID_VALUE, role, " range of ", bytes, " bytes at offset ", offset, " overruns its ",
           imported->size, "-byte import on device ", imported->device);
    }
    return DeviceRange{imported->device, const_cast<void*>(pointer)};
  }
  return std::nullopt;
}

}  // namespace axon::emulated
