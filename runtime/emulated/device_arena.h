// DeviceArena: one device's memory, an address range sub-allocator over a
// sparse memfd.
//
// The whole capacity is reserved up front (MAP_NORESERVE over a sparse memfd),
// so an 8 GiB device costs no RAM until its pages are touched. With memory
// protection the memfd is mapped twice: the "device view", whose addresses
// are handed out and which is PROT_NONE so host code that dereferences a
// device pointer faults, and a read/write "host view" used by copies and
// tasks. Without protection one read/write mapping serves as both, so there is
// a single code path.
//
// The arena also keeps the device's capacity accounting, which imported host
// memory (ImportedHostRegistry) shares: imports are charged here without
// taking any of the arena's address range.
//
// Thread-safety: every method is thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

namespace axon::emulated {

// Every allocation starts on, and is rounded up to, this many bytes.
constexpr std::size_t kDeviceAllocationAlignment = 256;

// Frees of at least this size give their pages back to the OS.
constexpr std::size_t kHolePunchThreshold = std::size_t{1} << 20;

// Allocations of at least this size start at a different offset within a page
// from the allocation before them, cycling through the page in steps of
// kDeviceAllocationAlignment. Why: the device is the host's memory, and the
// host's cores take a load to depend on an earlier store whenever the two
// addresses agree in their low 12 bits (4K aliasing). With every large
// allocation page-aligned, a kernel's input and output always agreed there,
// and the CPU's scans along a strided dimension (cumsum, cumprod, cummax)
// stalled on every element: 2.8-3x the CPU's time, whose malloc places
// tensors at varying offsets. The lead bytes before the returned address
// are freed with the allocation. They take address range, not capacity: the
// arena's range is a sixteenth larger than its capacity, more than the leads
// can take (at most 3840 bytes per allocation of at least 64 KiB), so
// staggering costs no memory. Placement stays best fit, and an allocation
// that refills a hole of about its size gets no lead.
constexpr std::size_t kStaggerFromBytes = std::size_t{64} << 10;
constexpr std::size_t kStaggerPeriod = 4096;

struct DeviceAllocation {
  char* base = nullptr;  // device address returned by allocate()
  std::size_t size = 0;  // bytes reserved (the request rounded up)
};

class DeviceArena {
 public:
  // Throws DriverError(AXON_ERROR_SYSTEM) if the memfd or mappings fail.
  DeviceArena(int device, std::size_t capacity, bool memory_protect);
  ~DeviceArena();
  DeviceArena(const DeviceArena&) = delete;
  DeviceArena& operator=(const DeviceArena&) = delete;

  // Best-fit allocation; throws DriverError(AXON_ERROR_OUT_OF_MEMORY).
  void* allocate(std::size_t bytes);

  // Counts `bytes` of imported memory against the capacity, or throws
  // DriverError(AXON_ERROR_OUT_OF_MEMORY) and counts nothing.
  void charge_import(std::size_t bytes);
  void discharge_import(std::size_t bytes);

  // Frees an allocation by its base address; throws
  // DriverError(AXON_ERROR_INVALID_POINTER) for anything else.
  void release(void* pointer);

  // Whether `pointer` lies in this arena's device address range at all.
  bool owns_address(const void* pointer) const;

  // Whether [begin, begin + bytes) touches the device or the host view.
  bool overlaps_mappings(const void* begin, std::size_t bytes) const;

  // The live allocation containing `pointer` (interior pointers included).
  std::optional<DeviceAllocation> find_allocation(const void* pointer) const;

  // Host-accessible alias of a device address of this arena.
  void* host_view(const void* device_pointer) const;

  std::size_t used_bytes() const;
  std::size_t capacity() const { return capacity_; }
  int device() const { return device_; }

 private:
  void insert_free_range(std::size_t offset, std::size_t size);
  void erase_free_range(std::size_t offset, std::size_t size);
  [[noreturn]] void fail_out_of_memory(std::size_t requested, bool fragmented) const;
  void return_pages_to_system(std::size_t allocation_offset, std::size_t allocation_size, std::size_t free_begin,
                              std::size_t free_end);

  const int device_;
  const std::size_t capacity_;
  std::size_t mapping_size_ = 0;
  int memory_fd_ = -1;
  char* device_base_ = nullptr;
  char* host_base_ = nullptr;

  mutable std::mutex mutex_;
  std::map<std::size_t, std::size_t> free_by_offset_;           // offset -> size
  std::set<std::pair<std::size_t, std::size_t>> free_by_size_;  // (size, offset)
  struct Allocation {
    std::size_t size;  // from the returned address on
    std::size_t lead;  // bytes reserved before it (kStaggerFromBytes)
  };
  std::map<std::size_t, Allocation> allocations_;  // offset of the returned address -> its extent
  std::size_t next_stagger_ = 0;                   // the next large allocation's offset within a page
  std::size_t used_bytes_ = 0;                     // allocations (rounded, without leads) and imports (exact)
};

}  // namespace axon::emulated
