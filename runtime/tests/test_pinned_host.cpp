// Pinned host memory: allocation, interior lookup, frees.

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "axon_test_support.h"

namespace {

int is_pinned(const void* pointer) {
  int pinned = -1;
  EXPECT_EQ(axon_host_pointer_is_pinned(pointer, &pinned), AXON_SUCCESS) << axon_last_error_message();
  return pinned;
}

}  // namespace

TEST(PinnedHost, AllocationsArePageAlignedAndUsableByHostCode) {
  void* pointer = nullptr;
  ASSERT_AXON_OK(axon_host_allocate(10000, &pointer));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(pointer) % static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE)), 0u);
  std::memset(pointer, 7, 10000);
  EXPECT_EQ(static_cast<unsigned char*>(pointer)[9999], 7);
  ASSERT_AXON_OK(axon_host_free(pointer));
}

TEST(PinnedHost, InteriorPointersArePinnedAndOthersAreNot) {
  void* pointer = nullptr;
  ASSERT_AXON_OK(axon_host_allocate(100, &pointer));
  char* base = static_cast<char*>(pointer);
  EXPECT_EQ(is_pinned(base), 1);
  EXPECT_EQ(is_pinned(base + 50), 1);
  EXPECT_EQ(is_pinned(base + 99), 1);
  EXPECT_EQ(is_pinned(base + 100), 0);
  int on_stack = 0;
  EXPECT_EQ(is_pinned(&on_stack), 0);
  EXPECT_EQ(is_pinned(nullptr), 0);
  std::vector<char> heap(64);
  EXPECT_EQ(is_pinned(heap.data()), 0);
  void* device_pointer = nullptr;
  ASSERT_AXON_OK(axon_memory_allocate(0, 256, &device_pointer));
  EXPECT_EQ(is_pinned(device_pointer), 0);
  ASSERT_AXON_OK(axon_memory_free(device_pointer));
  ASSERT_AXON_OK(axon_host_free(pointer));
  EXPECT_EQ(is_pinned(base), 0);
}

TEST(PinnedHost, InvalidArgumentsAreRejected) {
  void* pointer = reinterpret_cast<void*>(0x1234);
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_host_allocate(0, &pointer));
  EXPECT_EQ(pointer, reinterpret_cast<void*>(0x1234));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_host_allocate(16, nullptr));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_host_pointer_is_pinned(&pointer, nullptr));
  EXPECT_AXON_STATUS(AXON_ERROR_OUT_OF_MEMORY, axon_host_allocate(SIZE_MAX, &pointer));
  EXPECT_AXON_OK(axon_host_free(nullptr));
}

TEST(PinnedHost, FreeRejectsForeignInteriorAndFreedPointers) {
  int on_stack = 0;
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_POINTER, axon_host_free(&on_stack));
  EXPECT_NE(std::string(axon_last_error_message()).find("[axon_host_free]"), std::string::npos);
  void* pointer = nullptr;
  ASSERT_AXON_OK(axon_host_allocate(4096, &pointer));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_POINTER, axon_host_free(static_cast<char*>(pointer) + 1));
  ASSERT_AXON_OK(axon_host_free(pointer));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_POINTER, axon_host_free(pointer));
  void* device_pointer = nullptr;
  ASSERT_AXON_OK(axon_memory_allocate(0, 256, &device_pointer));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_POINTER, axon_host_free(device_pointer));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_POINTER, axon_memory_free(&on_stack));
  ASSERT_AXON_OK(axon_memory_free(device_pointer));
}
