// DeviceArena: mappings, best-fit sub-allocation with coalescing, hole punching.

#include "device_arena.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "axon/status.h"
#include "driver_error.h"

using namespace axon::common;

namespace axon::emulated {
namespace {

std::size_t round_up(std::size_t value, std::size_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

std::size_t round_down(std::size_t value, std::size_t alignment) { return value / alignment * alignment; }

std::size_t page_size() {
  static const std::size_t size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

[[noreturn]] void fail_system_call(int device, const char* what) {
  fail(AXON_ERROR_SYSTEM, "cannot set up the memory of device ", device, ": ", what, " failed (", std::strerror(errno),
       ")");
}

}  // namespace

DeviceArena::DeviceArena(int device, std::size_t capacity, bool memory_protect) : device_(device), capacity_(capacity) {
  // The address range exceeds the capacity by what staggering can take (see
  // kStaggerFromBytes): leads of at most 3840 bytes per allocation of at least
  // 64 KiB add under a sixteenth to the range in use.
  const std::size_t usable = round_down(capacity_, kDeviceAllocationAlignment);
  const std::size_t address_range = usable + round_up(usable / 16 + kStaggerPeriod, kDeviceAllocationAlignment);
  mapping_size_ = round_up(address_range, page_size());
  const std::string name = describe("axon-device-", device);
  memory_fd_ = memfd_create(name.c_str(), MFD_CLOEXEC);
  if (memory_fd_ < 0) fail_system_call(device, "memfd_create");
  // ftruncate only sets the file size: pages are created on first touch.
  if (ftruncate(memory_fd_, static_cast<off_t>(mapping_size_)) != 0) {
    close(memory_fd_);
    fail_system_call(device, "ftruncate");
  }
  const int flags = MAP_SHARED | MAP_NORESERVE;
  void* host = mmap(nullptr, mapping_size_, PROT_READ | PROT_WRITE, flags, memory_fd_, 0);
  if (host == MAP_FAILED) {
    close(memory_fd_);
    fail_system_call(device, "mmap of the host view");
  }
  host_base_ = static_cast<char*>(host);
  device_base_ = host_base_;
  if (memory_protect) {
    void* device_view = mmap(nullptr, mapping_size_, PROT_NONE, flags, memory_fd_, 0);
    if (device_view == MAP_FAILED) {
      munmap(host_base_, mapping_size_);
      close(memory_fd_);
      fail_system_call(device, "mmap of the protected device view");
    }
    device_base_ = static_cast<char*>(device_view);
  }
  if (usable > 0) insert_free_range(0, address_range);
}

DeviceArena::~DeviceArena() {
  if (device_base_ != host_base_) munmap(device_base_, mapping_size_);
  munmap(host_base_, mapping_size_);
  close(memory_fd_);
}

void DeviceArena::insert_free_range(std::size_t offset, std::size_t size) {
  free_by_offset_.emplace(offset, size);
  free_by_size_.emplace(size, offset);
}

void DeviceArena::erase_free_range(std::size_t offset, std::size_t size) {
  free_by_offset_.erase(offset);
  free_by_size_.erase({size, offset});
}

void* DeviceArena::allocate(std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::size_t size = bytes > capacity_ ? 0 : round_up(bytes, kDeviceAllocationAlignment);
  // Imports use capacity without using address range, so a free range can
  // fit while the capacity cannot.
  if (size == 0 || used_bytes_ + size > capacity_) fail_out_of_memory(bytes, /*fragmented=*/false);
  // Smallest free range that fits, lowest offset among equals. A large
  // allocation that takes less than half of it starts where its stagger says;
  // one that refills a hole of about its size starts at the hole's start, so
  // that freed neighbours serve requests of their total size as before.
  const auto fit = free_by_size_.lower_bound({size, 0});
  if (fit == free_by_size_.end()) fail_out_of_memory(bytes, /*fragmented=*/true);
  const std::size_t most_lead = kStaggerPeriod - kDeviceAllocationAlignment;
  std::size_t lead = 0;
  if (size >= kStaggerFromBytes && fit->first - size >= size + most_lead) {
    lead = (next_stagger_ + kStaggerPeriod - fit->second % kStaggerPeriod) % kStaggerPeriod;
    next_stagger_ = (next_stagger_ + kDeviceAllocationAlignment) % kStaggerPeriod;
  }
  const auto [range_size, range_offset] = *fit;
  const std::size_t reserved = lead + size;
  erase_free_range(range_offset, range_size);
  if (range_size > reserved) insert_free_range(range_offset + reserved, range_size - reserved);
  const std::size_t offset = range_offset + lead;
  allocations_.emplace(offset, Allocation{size, lead});
  used_bytes_ += size;
  return device_base_ + offset;
}

void DeviceArena::charge_import(std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (bytes > capacity_ - used_bytes_) fail_out_of_memory(bytes, /*fragmented=*/false);
  used_bytes_ += bytes;
}

void DeviceArena::discharge_import(std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  used_bytes_ -= bytes;
}

void DeviceArena::fail_out_of_memory(std::size_t requested, bool fragmented) const {
  fail(AXON_ERROR_OUT_OF_MEMORY, "out of memory on device ", device_, ": requested ", requested, " bytes, ",
       used_bytes_, " in use, capacity ", capacity_, " bytes",
       fragmented ? " (enough free bytes in total, but no contiguous free range is large enough)" : "");
}

void DeviceArena::release(void* pointer) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::size_t offset = static_cast<std::size_t>(static_cast<char*>(pointer) - device_base_);
  const auto allocation = allocations_.find(offset);
  if (allocation == allocations_.end()) {
    const auto containing = allocations_.upper_bound(offset);
    if (containing != allocations_.begin() &&
        offset < std::prev(containing)->first + std::prev(containing)->second.size) {
      fail(AXON_ERROR_INVALID_POINTER, "pointer ", pointer, " lies inside the allocation at ",
           static_cast<void*>(device_base_ + std::prev(containing)->first), " of device ", device_,
           "; expected that allocation's base address");
    }
    fail(AXON_ERROR_INVALID_POINTER, "pointer ", pointer, " is not a live allocation of device ", device_,
         " (already freed?)");
  }
  // The range given back starts with the lead.
  const std::size_t begin = offset - allocation->second.lead;
  const std::size_t size = allocation->second.lead + allocation->second.size;
  used_bytes_ -= allocation->second.size;
  allocations_.erase(allocation);

  // Coalesce with the free neighbours on both sides.
  std::size_t free_begin = begin;
  std::size_t free_end = begin + size;
  const auto next = free_by_offset_.lower_bound(begin);
  if (next != free_by_offset_.end() && next->first == free_end) {
    free_end += next->second;
    erase_free_range(next->first, next->second);
  }
  const auto following = free_by_offset_.lower_bound(begin);
  if (following != free_by_offset_.begin()) {
    const auto previous = std::prev(following);
    if (previous->first + previous->second == free_begin) {
      free_begin = previous->first;
      erase_free_range(previous->first, previous->second);
    }
  }
  insert_free_range(free_begin, free_end - free_begin);
  if (size >= kHolePunchThreshold) return_pages_to_system(begin, size, free_begin, free_end);
}

void DeviceArena::return_pages_to_system(std::size_t allocation_offset, std::size_t allocation_size,
                                         std::size_t free_begin, std::size_t free_end) {
  // Only whole pages that are now entirely free may be dropped: a page shared
  // with a live neighbour keeps its content.
  const std::size_t page = page_size();
  std::size_t begin = round_down(allocation_offset, page);
  if (begin < free_begin) begin = round_up(allocation_offset, page);
  std::size_t end = round_up(allocation_offset + allocation_size, page);
  if (end > free_end) end = round_down(allocation_offset + allocation_size, page);
  if (end <= begin) return;
  // Best effort: failing to punch only means the RAM stays in use.
  (void)fallocate(memory_fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(begin),
                  static_cast<off_t>(end - begin));
}

bool DeviceArena::owns_address(const void* pointer) const {
  const char* address = static_cast<const char*>(pointer);
  return address >= device_base_ && address < device_base_ + mapping_size_;
}

bool DeviceArena::overlaps_mappings(const void* begin, std::size_t bytes) const {
  const auto overlaps = [&](const char* base) {
    const char* first = static_cast<const char*>(begin);
    return first < base + mapping_size_ && base < first + bytes;
  };
  return overlaps(device_base_) || overlaps(host_base_);
}

std::optional<DeviceAllocation> DeviceArena::find_allocation(const void* pointer) const {
  if (!owns_address(pointer)) return std::nullopt;
  const std::size_t offset = static_cast<std::size_t>(static_cast<const char*>(pointer) - device_base_);
  std::lock_guard<std::mutex> lock(mutex_);
  const auto after = allocations_.upper_bound(offset);
  if (after == allocations_.begin()) return std::nullopt;
  const auto containing = std::prev(after);
  if (offset >= containing->first + containing->second.size) return std::nullopt;
  return DeviceAllocation{device_base_ + containing->first, containing->second.size};
}

void* DeviceArena::host_view(const void* device_pointer) const {
  return host_base_ + (static_cast<const char*>(device_pointer) - device_base_);
}

std::size_t DeviceArena::used_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return used_bytes_;
}

}  // namespace axon::emulated
