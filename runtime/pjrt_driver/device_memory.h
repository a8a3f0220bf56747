// DeviceMemory: every live allocation of the PJRT driver, and the byte-level
// reads and writes that stream work performs on them.
//
// An allocation is a range of a device's AddressSpace plus the PJRT buffer
// (u8[bytes]) that holds its bytes. PJRT buffers are values: no PJRT call
// writes into part of an existing buffer. A write therefore builds the new
// bytes as a new buffer and replaces the allocation's buffer with it; PJRT
// keeps the old one alive until work already using it is done.
//
// Writes that cover part of an allocation go through host memory: the driver
// reads the bytes around the written range, adds the new ones and uploads the
// whole allocation. That costs about one allocation's worth of transfers per
// partial write (cheap on the CPU plugin, slow on a real chip;
// docs/pjrt_driver_design.md, §2, has the compiled slice/update programs that
// replace it).
//
// Thread-safety: every method is thread-safe. Reads and writes run on device
// workers; an allocation's own mutex orders the buffer swaps of work on
// different devices (cross-device copies).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "address_space.h"
#include "pjrt_client.h"

namespace axon::pjrt_driver {

struct Allocation {
  int device = 0;
  char* base = nullptr;            // its device address
  std::size_t bytes = 0;           // requested
  std::size_t reserved = 0;        // taken from the address space (bytes rounded up to the granule)
  std::mutex mutex;                // guards `buffer`
  pjrt::Buffer* buffer = nullptr;  // u8[bytes], owned
};

// A pointer range inside one allocation.
struct DeviceRange {
  std::shared_ptr<Allocation> allocation;
  std::size_t offset = 0;
};

class DeviceMemory {
 public:
  // One AddressSpace per device, of capacity `capacities[device]`.
  DeviceMemory(pjrt::PjrtClient& client, const std::vector<std::size_t>& capacities);

  // Throws DriverError(AXON_ERROR_OUT_OF_MEMORY) with the requested, in-use
  // and capacity bytes, or the plugin's own out-of-memory message.
  void* allocate(int device, std::size_t bytes);
  // Throws DriverError(AXON_ERROR_INVALID_POINTER) unless `base` is the base of a live allocation.
  void free(void* base);

  // The allocation holding [pointer, pointer + bytes), or empty when
  // `pointer` is not device memory at all. Throws
  // DriverError(AXON_ERROR_INVALID_VALUE) for a range that starts inside an
  // allocation and runs past its end, and AXON_ERROR_INVALID_POINTER for a
  // pointer in a device's address range outside any live allocation.
  std::optional<DeviceRange> find(const void* pointer, std::size_t bytes, const char* role) const;

  std::size_t used(int device) const { return spaces_[static_cast<std::size_t>(device)]->used(); }
  std::size_t capacity(int device) const { return spaces_[static_cast<std::size_t>(device)]->capacity(); }

  // ---- on a device worker: wait for the plugin, throw pjrt::PjrtError ----
  void read(const DeviceRange& range, std::size_t bytes, void* destination) const;
  void write(const DeviceRange& range, std::size_t bytes, const void* source) const;
  void fill(const DeviceRange& range, std::size_t bytes, unsigned char value) const;

 private:
  pjrt::PjrtClient& client_;
  std::vector<std::unique_ptr<AddressSpace>> spaces_;
  mutable std::mutex mutex_;                                        // guards allocations_
  std::map<const char*, std::shared_ptr<Allocation>> allocations_;  // by base address
};

}  // namespace axon::pjrt_driver
