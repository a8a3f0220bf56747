// AddressSpace: the device addresses of one PJRT device's memory.
//
// A PJRT buffer has no address the host may use, but the boundary hands out
// pointers (axon/memory.h: interior pointers, pointer arithmetic above). Each
// device therefore reserves a range of virtual addresses, as large as its
// capacity and mapped PROT_NONE (no memory behind it, and a stray host
// dereference faults), and hands out ranges of it; the driver maps each range
// to the PJRT buffer holding its bytes. Ranges are best-fit with a 256-byte
// granule and coalesce when released, and the reserved bytes are the
// device's used memory.
//
// Thread-safety: every method is thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <utility>

namespace axon::pjrt_driver {

constexpr std::size_t kAllocationGranule = 256;

class AddressSpace {
 public:
  // Throws DriverError(AXON_ERROR_SYSTEM) when the range cannot be reserved.
  explicit AddressSpace(std::size_t capacity);
  ~AddressSpace();
  AddressSpace(const AddressSpace&) = delete;
  AddressSpace& operator=(const AddressSpace&) = delete;

  // The base of `bytes` (> 0, rounded up to the granule; *reserved says to
  // what), or null when no free range is large enough.
  char* reserve(std::size_t bytes, std::size_t* reserved);
  // Returns a range reserve() handed out.
  void release(char* base, std::size_t reserved);

  bool contains(const void* pointer) const;
  std::size_t capacity() const { return capacity_; }
  std::size_t used() const;

 private:
  void add_free(std::uintptr_t base, std::size_t size);
  void remove_free(std::uintptr_t base, std::size_t size);

  char* start_ = nullptr;
  std::size_t capacity_ = 0;
  mutable std::mutex mutex_;
  std::size_t used_ = 0;
  std::map<std::uintptr_t, std::size_t> free_by_address_;
  std::set<std::pair<std::size_t, std::uintptr_t>> free_by_size_;
};

}  // namespace axon::pjrt_driver
