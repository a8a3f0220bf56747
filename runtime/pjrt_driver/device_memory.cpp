#include "device_memory.h"

#include <cstring>
#include <iterator>

#include "driver_error.h"

using namespace axon::common;

namespace axon::pjrt_driver {

DeviceMemory::DeviceMemory(pjrt::PjrtClient& client, const std::vector<std::size_t>& capacities) : client_(client) {
  for (const std::size_t capacity : capacities) spaces_.push_back(std::make_unique<AddressSpace>(capacity));
}

void* DeviceMemory::allocate(int device, std::size_t bytes) {
  AddressSpace& space = *spaces_[static_cast<std::size_t>(device)];
  auto allocation = std::make_shared<Allocation>();
  allocation->device = device;
  allocation->bytes = bytes;
  allocation->base = space.reserve(bytes, &allocation->reserved);
  if (allocation->base == nullptr) {
    fail(AXON_ERROR_OUT_OF_MEMORY, "out of memory on device ", device, ": requested ", bytes, " bytes, ", space.used(),
         " in use, capacity ", space.capacity(), " bytes");
  }
  try {
    allocation->buffer = client_.allocate(static_cast<std::size_t>(device), bytes);
  } catch (const pjrt::PjrtError& error) {
    space.release(allocation->base, allocation->reserved);
    fail(error.code() == pjrt::kResourceExhausted ? AXON_ERROR_OUT_OF_MEMORY : AXON_ERROR_SYSTEM,
         "out of memory on device ", device, ": requested ", bytes, " bytes, ", space.used(), " in use, capacity ",
         space.capacity(), " bytes; the plugin refused: ", error.what());
  }
  std::lock_guard<std::mutex> guard(mutex_);
  allocations_.emplace(allocation->base, allocation);
  return allocation->base;
}

void DeviceMemory::free(void* base) {
  std::shared_ptr<Allocation> allocation;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    const auto found = allocations_.find(static_cast<const char*>(base));
    if (found == allocations_.end()) {
      const auto after = allocations_.upper_bound(static_cast<const char*>(base));
      if (after != allocations_.begin()) {
        const Allocation& containing = *std::prev(after)->second;
        if (static_cast<const char*>(base) < containing.base + containing.bytes) {
          fail(AXON_ERROR_INVALID_POINTER, "pointer ", base, " lies inside the allocation at ",
               static_cast<const void*>(containing.base), " of device ", containing.device,
               "; expected that allocation's base address");
        }
      }
      fail(AXON_ERROR_INVALID_POINTER, "pointer ", base,
           " is not a live device allocation (already freed, or never allocated)");
    }
    allocation = std::move(found->second);
    allocations_.erase(found);
  }
  std::lock_guard<std::mutex> guard(allocation->mutex);
  client_.destroy(allocation->buffer);
  allocation->buffer = nullptr;
  spaces_[static_cast<std::size_t>(allocation->device)]->release(allocation->base, allocation->reserved);
}

std::optional<DeviceRange> DeviceMemory::find(const void* pointer, std::size_t bytes, const char* role) const {
  const char* address = static_cast<const char*>(pointer);
  bool in_device_space = false;
  for (const auto& space : spaces_) in_device_space = in_device_space || space->contains(pointer);
  if (!in_device_space) return std::nullopt;
  std::lock_guard<std::mutex> guard(mutex_);
  auto after = allocations_.upper_bound(address);
  if (after != allocations_.begin()) {
    const std::shared_ptr<Allocation>& allocation = std::prev(after)->second;
    const std::size_t offset = static_cast<std::size_t>(address - allocation->base);
    if (offset < allocation->bytes) {
      if (bytes > allocation->bytes - offset) {
        fail(AXON_ERROR_INVALID_VALUE, role, " range of ", bytes, " bytes at offset ", offset, " overruns its ",
             allocation->bytes, "-byte device allocation");
      }
      return DeviceRange{allocation, offset};
    }
  }
  fail(AXON_ERROR_INVALID_POINTER, role, " pointer ", pointer,
       " lies in a device's address range but not inside a live allocation (freed?)");
}

void DeviceMemory::read(const DeviceRange& range, std::size_t bytes, void* destination) const {
  std::lock_guard<std::mutex> guard(range.allocation->mutex);
  client_.download(range.allocation->buffer, range.offset, bytes, destination);
}

void DeviceMemory::write(const DeviceRange& range, std::size_t bytes, const void* source) const {
  Allocation& allocation = *range.allocation;
  std::lock_guard<std::mutex> guard(allocation.mutex);
  const std::vector<int64_t> dims = {static_cast<int64_t>(allocation.bytes)};
  pjrt::Buffer* replacement = nullptr;
  if (range.offset == 0 && bytes == allocation.bytes) {
    replacement = client_.upload(static_cast<std::size_t>(allocation.device), source, pjrt::kU8, dims);
  } else {
    // Only the bytes around the written range come from the device: a write that covers
    // most of its allocation (an output in a rounded-up block) downloads almost nothing.
    std::vector<unsigned char> whole(allocation.bytes);
    const std::size_t end = range.offset + bytes;
    if (range.offset > 0) client_.download(allocation.buffer, 0, range.offset, whole.data());
    if (end < allocation.bytes) client_.download(allocation.buffer, end, allocation.bytes - end, whole.data() + end);
    std::memcpy(whole.data() + range.offset, source, bytes);
    replacement = client_.upload(static_cast<std::size_t>(allocation.device), whole.data(), pjrt::kU8, dims);
  }
  client_.destroy(allocation.buffer);
  allocation.buffer = replacement;
}

void DeviceMemory::fill(const DeviceRange& range, std::size_t bytes, unsigned char value) const {
  const std::vector<unsigned char> filled(bytes, value);
  write(range, bytes, filled.data());
}

}  // namespace axon::pjrt_driver
