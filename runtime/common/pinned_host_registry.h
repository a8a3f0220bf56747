// PinnedHostRegistry: page-aligned, page-locked host allocations.
//
// Allocations are tracked in an ordered map so that any address inside one
// (not only its base) is recognized as pinned; copies use that to skip the
// staging buffer. Locking the pages (mlock) is best effort: a failed
// mlock changes nothing but the RAM accounting (the drivers read these bytes
// on the host).
//
// Thread-safety: every method is thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

namespace axon::common {

struct PinnedHostAllocation {
  char* base = nullptr;
  std::size_t size = 0;  // bytes requested
};

class PinnedHostRegistry {
 public:
  // Throws DriverError(AXON_ERROR_OUT_OF_MEMORY) when the host refuses.
  void* allocate(std::size_t bytes);

  // Throws DriverError(AXON_ERROR_INVALID_POINTER) unless `pointer` is the
  // base of a live pinned allocation.
  void release(void* pointer);

  std::optional<PinnedHostAllocation> find_allocation(const void* pointer) const;

  // For a copy's side: whether [pointer, pointer + bytes) starts in a pinned
  // allocation; throws DriverError(AXON_ERROR_INVALID_VALUE) when it starts in
  // one and overruns it. `role` names the pointer in messages ("source").
  bool holds_range(const void* pointer, std::size_t bytes, const char* role) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::uintptr_t, std::size_t> allocations_;  // base address -> bytes requested
};

}  // namespace axon::common
