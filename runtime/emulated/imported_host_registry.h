// ImportedHostRegistry: host ranges adopted as device memory
// (axon_memory_import_host), found by any address inside them.
//
// Imported memory keeps its host address as its device address, so it lies
// outside every DeviceArena's range and needs a lookup of its own: an ordered
// map from base address, as for pinned host memory. The device's capacity
// accounting stays in its DeviceArena; this only records the ranges.
//
// Header-only: small enough, and it keeps the runtime's source list as is.
//
// Thread-safety: every method is thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>

#include "axon/status.h"
#include "driver_error.h"

namespace axon::emulated {

struct ImportedHostRange {
  char* base = nullptr;
  std::size_t size = 0;  // bytes imported, exactly
  int device = -1;
};

class ImportedHostRegistry {
 public:
  // Records [base, base + size) for `device`. Throws
  // DriverError(AXON_ERROR_INVALID_VALUE), recording nothing, if it overlaps
  // a live import. The caller has checked that the range does not wrap.
  void insert(char* base, std::size_t size, int device) {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::uintptr_t begin = reinterpret_cast<std::uintptr_t>(base);
    const auto after = imports_.lower_bound(begin);
    const auto overlapping = [&](auto entry) {
      return entry->first < begin + size && begin < entry->first + entry->second.size;
    };
    auto conflict = imports_.end();
    if (after != imports_.end() && overlapping(after)) conflict = after;
    if (after != imports_.begin() && overlapping(std::prev(after))) conflict = std::prev(after);
    if (conflict != imports_.end()) {
      common::fail(AXON_ERROR_INVALID_VALUE, "host range [", static_cast<void*>(base), ", +", size,
                   " bytes) overlaps the live import [", static_cast<void*>(conflict->second.base), ", +",
                   conflict->second.size, " bytes) on device ", conflict->second.device,
                   "; end that import first or import the whole buffer once");
    }
    imports_.emplace(begin, ImportedHostRange{base, size, device});
  }

  // Removes the import based at `base` and returns it; nullopt if no import
  // contains `base`. Throws DriverError(AXON_ERROR_INVALID_POINTER) for an
  // interior address of an import.
  std::optional<ImportedHostRange> erase(const void* base) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto containing = find_locked(base);
    if (containing == imports_.end()) return std::nullopt;
    const ImportedHostRange range = containing->second;
    if (range.base != base) {
      common::fail(AXON_ERROR_INVALID_POINTER, "pointer ", base, " lies inside the import at ",
                   static_cast<void*>(range.base), " of device ", range.device,
                   "; expected that import's base address");
    }
    imports_.erase(containing);
    return range;
  }

  // The live import containing `pointer` (interior pointers included).
  std::optional<ImportedHostRange> find(const void* pointer) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto containing = find_locked(pointer);
    if (containing == imports_.end()) return std::nullopt;
    return containing->second;
  }

 private:
  using Map = std::map<std::uintptr_t, ImportedHostRange>;  // base address -> range

  Map::const_iterator find_locked(const void* pointer) const {
    const std::uintptr_t address = reinterpret_cast<std::uintptr_t>(pointer);
    const auto after = imports_.upper_bound(address);
    if (after == imports_.begin()) return imports_.end();
    const auto containing = std::prev(after);
    if (address >= containing->first + containing->second.size) return imports_.end();
    return containing;
  }

  mutable std::mutex mutex_;
  Map imports_;
};

}  // namespace axon::emulated
