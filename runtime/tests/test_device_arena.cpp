// DeviceArena in isolation (emulated driver only): sub-allocation, lookup,
// protection and returning freed pages to the OS.

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "device_arena.h"
#include "driver_error.h"

using axon::common::DriverError;
using axon::emulated::DeviceArena;

namespace {

constexpr size_t kMiB = size_t{1} << 20;

// Resident shared-memory pages of this process, which is where memfd pages count.
size_t resident_shared_memory_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("RssShmem:", 0) == 0) return std::stoul(line.substr(9)) * 1024;
  }
  return 0;
}

}  // namespace

TEST(DeviceArena, AllocatesAlignedRangesAndFindsInteriorPointers) {
  DeviceArena arena(3, kMiB, false);
  char* first = static_cast<char*>(arena.allocate(1));
  char* second = static_cast<char*>(arena.allocate(300));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 256, 0u);
  EXPECT_EQ(second - first, 256);
  EXPECT_EQ(arena.used_bytes(), 256u + 512u);
  const auto found = arena.find_allocation(second + 511);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->base, second);
  EXPECT_EQ(found->size, 512u);
  EXPECT_FALSE(arena.find_allocation(second + 512).has_value());
  EXPECT_TRUE(arena.owns_address(second + 512));
  EXPECT_EQ(arena.host_view(second), second);
  arena.release(first);
  arena.release(second);
  EXPECT_EQ(arena.used_bytes(), 0u);
}

TEST(DeviceArena, LargeAllocationsStartAtDifferentOffsetsWithinAPage) {
  // Consecutive large allocations step through a page by the alignment, so
  // that a kernel's input and output do not agree in their low 12 bits.
  DeviceArena arena(0, 64 * kMiB, false);
  std::vector<char*> pointers;
  for (int i = 0; i < 17; ++i) pointers.push_back(static_cast<char*>(arena.allocate(kMiB)));
  for (int i = 0; i < 17; ++i) {
    const auto address = reinterpret_cast<uintptr_t>(pointers[i]);
    EXPECT_EQ(address % 256, 0u);
    EXPECT_EQ((address - reinterpret_cast<uintptr_t>(pointers[0])) % 4096, (256u * i) % 4096) << i;
    const auto found = arena.find_allocation(pointers[i] + kMiB - 1);
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(found->base, pointers[i]);
    EXPECT_EQ(found->size, kMiB);
    if (i > 0) {
      EXPECT_FALSE(arena.find_allocation(pointers[i] - 1).has_value()) << i;  // in its lead
    }
  }
  // The leads take address range, not capacity, and return with their
  // allocations: afterwards the whole capacity is one free range again.
  EXPECT_EQ(arena.used_bytes(), 17 * kMiB);
  for (char* pointer : pointers) arena.release(pointer);
  EXPECT_EQ(arena.used_bytes(), 0u);
  arena.release(arena.allocate(64 * kMiB));
  // Small allocations stay packed.
  char* first = static_cast<char*>(arena.allocate(4096));
  char* second = static_cast<char*>(arena.allocate(4096));
  EXPECT_EQ(second - first, 4096);
}

TEST(DeviceArena, AHoleOfItsSizeIsRefilledWithoutALead) {
  // Placement stays best fit: a freed block's exact hole serves the next
  // request of its size, at the hole's start.
  DeviceArena arena(0, kMiB, false);
  char* first = static_cast<char*>(arena.allocate(64 << 10));
  char* second = static_cast<char*>(arena.allocate(64 << 10));
  EXPECT_NE((second - first) % 4096, 0);
  arena.release(first);
  EXPECT_EQ(arena.allocate(64 << 10), first);
}

TEST(DeviceArena, TheWholeCapacityFitsInLargeAllocations) {
  DeviceArena arena(0, kMiB, false);
  std::vector<void*> quarters;
  for (int i = 0; i < 4; ++i) quarters.push_back(arena.allocate(kMiB / 4));
  EXPECT_EQ(arena.used_bytes(), kMiB);
  EXPECT_THROW(arena.allocate(256), DriverError);
}

TEST(DeviceArena, ReleaseRejectsInteriorAndUnknownPointers) {
  DeviceArena arena(0, kMiB, false);
  char* pointer = static_cast<char*>(arena.allocate(1024));
  try {
    arena.release(pointer + 256);
    FAIL() << "expected a DriverError";
  } catch (const DriverError& error) {
    EXPECT_EQ(error.status(), AXON_ERROR_INVALID_POINTER);
    EXPECT_NE(std::string(error.what()).find("base address"), std::string::npos) << error.what();
  }
  arena.release(pointer);
  EXPECT_THROW(arena.release(pointer), DriverError);
}

TEST(DeviceArena, ThrowsOutOfMemoryWithTheDetail) {
  DeviceArena arena(2, 4096, false);
  arena.allocate(1024);
  try {
    arena.allocate(4000);
    FAIL() << "expected a DriverError";
  } catch (const DriverError& error) {
    EXPECT_EQ(error.status(), AXON_ERROR_OUT_OF_MEMORY);
    EXPECT_STREQ(error.what(), "out of memory on device 2: requested 4000 bytes, 1024 in use, capacity 4096 bytes");
  }
}

TEST(DeviceArena, ProtectedArenaHandsOutAddressesDistinctFromTheHostView) {
  DeviceArena arena(0, kMiB, true);
  char* pointer = static_cast<char*>(arena.allocate(4096));
  char* view = static_cast<char*>(arena.host_view(pointer));
  EXPECT_NE(view, pointer);
  std::strcpy(view, "alias");
  EXPECT_STREQ(static_cast<char*>(arena.host_view(pointer)), "alias");
  EXPECT_FALSE(arena.owns_address(view));
  arena.release(pointer);
}

TEST(DeviceArena, ReservingCapacityCostsNoMemoryAndLargeFreesReturnIt) {
  const size_t before_reserve = resident_shared_memory_bytes();
  DeviceArena arena(0, size_t{64} << 30, false);  // 64 GiB of address space only
  EXPECT_LT(resident_shared_memory_bytes(), before_reserve + 4 * kMiB);

  constexpr size_t kBytes = 64 * kMiB;
  void* pointer = arena.allocate(kBytes);
  std::memset(arena.host_view(pointer), 1, kBytes);
  const size_t touched = resident_shared_memory_bytes();
  EXPECT_GE(touched, before_reserve + kBytes - 4 * kMiB);
  arena.release(pointer);
  EXPECT_LE(resident_shared_memory_bytes(), touched - (kBytes - 4 * kMiB));
}
