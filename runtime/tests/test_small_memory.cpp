// AXON_DEVICE_MEMORY=1MiB, AXON_DEVICE_COUNT=2: exact capacity accounting,
// out-of-memory detail, and reuse of coalesced free ranges.

#include <string>
#include <vector>

#include "axon_test_support.h"

namespace {

constexpr size_t kCapacity = size_t{1} << 20;
constexpr size_t kQuarter = kCapacity / 4;

}  // namespace

TEST(SmallMemory, ConfigurationIsApplied) {
  EXPECT_EQ(axon_test::device_count(), 2);
  for (int device = 0; device < 2; ++device) {
    axon_device_properties properties{};
    ASSERT_AXON_OK(axon_device_get_properties(device, &properties));
    EXPECT_EQ(properties.total_memory, kCapacity);
  }
}

TEST(SmallMemory, OutOfMemoryDetailIsExact) {
  void* held = nullptr;
  ASSERT_AXON_OK(axon_memory_allocate(1, 4096, &held));
  void* pointer = nullptr;
  EXPECT_AXON_STATUS(AXON_ERROR_OUT_OF_MEMORY, axon_memory_allocate(1, kCapacity, &pointer));
  EXPECT_EQ(std::string(axon_last_error_message()),
            "[axon_memory_allocate] out of memory on device 1: requested 1048576 bytes, 4096 in use, "
            "capacity 1048576 bytes");
  ASSERT_AXON_OK(axon_memory_free(held));
  ASSERT_AXON_OK(axon_memory_allocate(1, kCapacity, &pointer));  // the whole device, once free
  size_t free_bytes = 1;
  size_t total_bytes = 0;
  ASSERT_AXON_OK(axon_device_memory_info(1, &free_bytes, &total_bytes));
  EXPECT_EQ(free_bytes, 0u);
  ASSERT_AXON_OK(axon_memory_free(pointer));
}

TEST(SmallMemory, FreedNeighboursCoalesceIntoOneRange) {
  std::vector<void*> quarters(4);
  for (void*& quarter : quarters) ASSERT_AXON_OK(axon_memory_allocate(0, kQuarter, &quarter));
  void* extra = nullptr;
  EXPECT_AXON_STATUS(AXON_ERROR_OUT_OF_MEMORY, axon_memory_allocate(0, 256, &extra));

  // Free two adjacent quarters (in an order that exercises both merge sides).
  ASSERT_AXON_OK(axon_memory_free(quarters[2]));
  ASSERT_AXON_OK(axon_memory_free(quarters[1]));
  void* half = nullptr;
  ASSERT_AXON_OK(axon_memory_allocate(0, 2 * kQuarter, &half));
  // Where the two quarters were (large allocations start a few hundred bytes
  // into their range: device_arena.h, kStaggerFromBytes).
  EXPECT_GT(static_cast<char*>(half), static_cast<char*>(quarters[0]));
  EXPECT_LE(static_cast<char*>(half), static_cast<char*>(quarters[1]));
  ASSERT_AXON_OK(axon_memory_free(half));

  // Fragmented: half the device free in total, but not contiguously.
  void* second = nullptr;
  void* third = nullptr;
  ASSERT_AXON_OK(axon_memory_allocate(0, kQuarter, &second));
  ASSERT_AXON_OK(axon_memory_allocate(0, kQuarter, &third));
  ASSERT_AXON_OK(axon_memory_free(second));
  ASSERT_AXON_OK(axon_memory_free(quarters[3]));
  void* too_big = nullptr;
  EXPECT_AXON_STATUS(AXON_ERROR_OUT_OF_MEMORY, axon_memory_allocate(0, 2 * kQuarter, &too_big));
  EXPECT_NE(std::string(axon_last_error_message()).find("contiguous"), std::string::npos) << axon_last_error_message();

  ASSERT_AXON_OK(axon_memory_free(quarters[0]));
  ASSERT_AXON_OK(axon_memory_free(third));
  void* whole = nullptr;
  ASSERT_AXON_OK(axon_memory_allocate(0, kCapacity, &whole));
  ASSERT_AXON_OK(axon_memory_free(whole));
}

TEST(SmallMemory, BestFitPrefersTheSmallestSufficientHole) {
  void* a = nullptr;
  void* b = nullptr;
  void* c = nullptr;
  void* d = nullptr;
  ASSERT_AXON_OK(axon_memory_allocate(0, 4096, &a));
  ASSERT_AXON_OK(axon_memory_allocate(0, 1024, &b));
  ASSERT_AXON_OK(axon_memory_allocate(0, 4096, &c));
  ASSERT_AXON_OK(axon_memory_allocate(0, 512, &d));  // keeps b's hole from merging with the tail
  ASSERT_AXON_OK(axon_memory_free(b));
  void* small = nullptr;
  ASSERT_AXON_OK(axon_memory_allocate(0, 1000, &small));
  EXPECT_EQ(small, b);
  for (void* pointer : {a, c, d, small}) ASSERT_AXON_OK(axon_memory_free(pointer));
  size_t used = 1;
  ASSERT_AXON_OK(axon_memory_used(0, &used));
  EXPECT_EQ(used, 0u);
}

TEST(SmallMemory, ImportsShareTheCapacityWithAllocations) {
  std::vector<char> host(kCapacity + 1);
  void* imported = nullptr;
  const axon_status status = axon_memory_import_host(1, host.data(), 3 * kQuarter, &imported);
  if (status == AXON_ERROR_NOT_SUPPORTED) GTEST_SKIP() << "driver cannot import host memory";
  ASSERT_EQ(status, AXON_SUCCESS) << AXON_STATUS_TEXT(status);

  // The arena's address range is all free, but its capacity is not.
  void* pointer = nullptr;
  EXPECT_AXON_STATUS(AXON_ERROR_OUT_OF_MEMORY, axon_memory_allocate(1, 2 * kQuarter, &pointer));
  EXPECT_EQ(std::string(axon_last_error_message()),
            "[axon_memory_allocate] out of memory on device 1: requested 524288 bytes, 786432 in use, "
            "capacity 1048576 bytes");
  ASSERT_AXON_OK(axon_memory_allocate(1, kQuarter, &pointer));  // exactly what is left

  // A refused import leaves nothing imported.
  void* refused = reinterpret_cast<void*>(0x1234);
  EXPECT_AXON_STATUS(AXON_ERROR_OUT_OF_MEMORY, axon_memory_import_host(1, host.data() + 3 * kQuarter, 1, &refused));
  EXPECT_EQ(std::string(axon_last_error_message()),
            "[axon_memory_import_host] out of memory on device 1: requested 1 bytes, 1048576 in use, "
            "capacity 1048576 bytes");
  EXPECT_EQ(refused, reinterpret_cast<void*>(0x1234));
  int owner = -1;
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_POINTER, axon_memory_pointer_device(host.data() + 3 * kQuarter, &owner));
  EXPECT_AXON_STATUS(AXON_ERROR_OUT_OF_MEMORY, axon_memory_import_host(0, host.data(), kCapacity + 1, &refused));

  // Ending the import gives its capacity back.
  ASSERT_AXON_OK(axon_memory_free(imported));
  ASSERT_AXON_OK(axon_memory_import_host(1, host.data(), 3 * kQuarter, &imported));
  ASSERT_AXON_OK(axon_memory_free(imported));
  ASSERT_AXON_OK(axon_memory_free(pointer));
  size_t used = 1;
  ASSERT_AXON_OK(axon_memory_used(1, &used));
  EXPECT_EQ(used, 0u);
}
