#include "address_space.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <iterator>

#include "driver_error.h"

using namespace axon::common;

namespace axon::pjrt_driver {

AddressSpace::AddressSpace(std::size_t capacity) : capacity_(capacity / kAllocationGranule * kAllocationGranule) {
  if (capacity_ == 0) return;
  void* range = mmap(nullptr, capacity_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (range == MAP_FAILED) {
    fail(AXON_ERROR_SYSTEM, "driver initialization failed: cannot reserve ", capacity_,
         " bytes of address space for a device (", std::strerror(errno), ")");
  }
  start_ = static_cast<char*>(range);
  add_free(reinterpret_cast<std::uintptr_t>(start_), capacity_);
}

AddressSpace::~AddressSpace() {
  if (start_ != nullptr) munmap(start_, capacity_);
}

void AddressSpace::add_free(std::uintptr_t base, std::size_t size) {
  free_by_address_.emplace(base, size);
  free_by_size_.emplace(size, base);
}

void AddressSpace::remove_free(std::uintptr_t base, std::size_t size) {
  free_by_address_.erase(base);
  free_by_size_.erase({size, base});
}

char* AddressSpace::reserve(std::size_t bytes, std::size_t* reserved) {
  if (bytes > capacity_) return nullptr;
  const std::size_t size = (bytes + kAllocationGranule - 1) / kAllocationGranule * kAllocationGranule;
  std::lock_guard<std::mutex> guard(mutex_);
  const auto best = free_by_size_.lower_bound({size, 0});
  if (best == free_by_size_.end()) return nullptr;
  const auto [free_size, base] = *best;
  remove_free(base, free_size);
  if (free_size > size) add_free(base + size, free_size - size);
  used_ += size;
  *reserved = size;
  return reinterpret_cast<char*>(base);
}

void AddressSpace::release(char* pointer, std::size_t reserved) {
  std::lock_guard<std::mutex> guard(mutex_);
  std::uintptr_t base = reinterpret_cast<std::uintptr_t>(pointer);
  std::size_t size = reserved;
  used_ -= reserved;
  // Coalesce with the free neighbours on both sides.
  const auto next = free_by_address_.lower_bound(base);
  if (next != free_by_address_.end() && next->first == base + size) {
    const std::size_t next_size = next->second;
    remove_free(next->first, next_size);
    size += next_size;
  }
  const auto after = free_by_address_.lower_bound(base);
  if (after != free_by_address_.begin()) {
    const auto previous = std::prev(after);
    if (previous->first + previous->second == base) {
      const auto [previous_base, previous_size] = *previous;
      remove_free(previous_base, previous_size);
      base = previous_base;
      size += previous_size;
    }
  }
  add_free(base, size);
}

bool AddressSpace::contains(const void* pointer) const {
  const char* address = static_cast<const char*>(pointer);
  return start_ != nullptr && address >= start_ && address < start_ + capacity_;
}

std::size_t AddressSpace::used() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return used_;
}

}  // namespace axon::pjrt_driver
