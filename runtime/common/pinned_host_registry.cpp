// PinnedHostRegistry: anonymous mappings, best-effort mlock, interior lookup.

#include "pinned_host_registry.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "axon/status.h"
#include "driver_error.h"

namespace axon::common {
namespace {

std::size_t mapping_size_for(std::size_t bytes) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

}  // namespace

void* PinnedHostRegistry::allocate(std::size_t bytes) {
  const std::size_t size = mapping_size_for(bytes);
  if (size < bytes) {
    fail(AXON_ERROR_OUT_OF_MEMORY, "cannot pin ", bytes, " bytes of host memory: size overflows");
  }
  void* memory = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    fail(AXON_ERROR_OUT_OF_MEMORY, "cannot allocate ", bytes, " bytes of pinned host memory (", std::strerror(errno),
         ")");
  }
  (void)mlock(memory, size);
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    allocations_.emplace(reinterpret_cast<std::uintptr_t>(memory), bytes);
  } catch (...) {
    munmap(memory, size);
    throw;
  }
  return memory;
}

void PinnedHostRegistry::release(void* pointer) {
  std::size_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto allocation = allocations_.find(reinterpret_cast<std::uintptr_t>(pointer));
    if (allocation == allocations_.end()) {
      fail(AXON_ERROR_INVALID_POINTER, "pointer ", pointer,
           " is not the base of a live pinned host allocation (foreign pointer, interior pointer, "
           "or already freed?)");
    }
    bytes = allocation->second;
    allocations_.erase(allocation);
  }
  munmap(pointer, mapping_size_for(bytes));  // also unlocks the pages
}

std::optional<PinnedHostAllocation> PinnedHostRegistry::find_allocation(const void* pointer) const {
  const std::uintptr_t address = reinterpret_cast<std::uintptr_t>(pointer);
  std::lock_guard<std::mutex> lock(mutex_);
  const auto after = allocations_.upper_bound(address);
  if (after == allocations_.begin()) return std::nullopt;
  const auto containing = std::prev(after);
  if (address >= containing->first + containing->second) return std::nullopt;
  return PinnedHostAllocation{reinterpret_cast<char*>(containing->first), containing->second};
}

bool PinnedHostRegistry::holds_range(const void* pointer, std::size_t bytes, const char* role) const {
  const auto pinned = find_allocation(pointer);
  if (!pinned) return false;
  const std::size_t offset = static_cast<std::size_t>(static_cast<const char*>(pointer) - pinned->base);
  if (bytes > pinned->size - offset) {
    fail(AXON_ERROR_INVALID_VALUE, role, " range of ", bytes, " bytes at offset ", offset, " overruns its ",
         pinned->size, "-byte pinned host allocation");
  }
  return true;
}

}  // namespace axon::common
