// Device memory: allocation, accounting, frees and pointer queries.

#include <cstdint>
#include <string>
#include <vector>

#include "axon_test_support.h"

using axon_test::contains;
using axon_test::memory_used;

TEST(Memory, AllocationsAreAlignedDistinctAndOwnedByTheirDevice) {
  for (int device = 0; device < axon_test::device_count(); ++device) {
    std::vector<void*> pointers;
    for (size_t bytes : {size_t{1}, size_t{255}, size_t{256}, size_t{4097}, size_t{1} << 20}) {
      void* pointer = nullptr;
      ASSERT_AXON_OK(axon_memory_allocate(device, bytes, &pointer));
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(pointer) % 256, 0u);
      int owner = -1;
      ASSERT_AXON_OK(axon_memory_pointer_device(pointer, &owner));
      EXPECT_EQ(owner, device);
      for (void* other : pointers) EXPECT_NE(other, pointer);
      pointers.push_back(pointer);
    }
    for (void* pointer : pointers) ASSERT_AXON_OK(axon_memory_free(pointer));
  }
}

TEST(Memory, UsedBytesTrackAllocationsAndFrees) {
  const size_t before = memory_used(0);
  void* first = nullptr;
  void* second = nullptr;
  ASSERT_AXON_OK(axon_memory_allocate(0, 1000, &first));
  const size_t after_first = memory_used(0);
  EXPECT_GE(after_first - before, 1000u);
  EXPECT_LT(after_first - before, 1000u + 256u);  // rounded to the 256-byte granule at most
  ASSERT_AXON_OK(axon_memory_allocate(0, 4096, &second));
  EXPECT_EQ(memory_used(0) - after_first, 4096u);
  ASSERT_AXON_OK(axon_memory_free(first));
  EXPECT_EQ(memory_used(0) - before, 4096u);
  ASSERT_AXON_OK(axon_memory_free(second));
  EXPECT_EQ(memory_used(0), before);
}

TEST(Memory, InvalidArgumentsAreRejected) {
  void* pointer = reinterpret_cast<void*>(0x1234);
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_memory_allocate(0, 0, &pointer));
  EXPECT_EQ(pointer, reinterpret_cast<void*>(0x1234));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_memory_allocate(0, 16, nullptr));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_DEVICE, axon_memory_allocate(-1, 16, &pointer));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_DEVICE, axon_memory_allocate(axon_test::device_count(), 16, &pointer));
  size_t bytes = 0;
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_DEVICE, axon_memory_used(-1, &bytes));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_memory_used(0, nullptr));
}

TEST(Memory, OutOfMemoryStatesRequestUseAndCapacityAndLeavesOutputAlone) {
  axon_device_properties properties{};
  ASSERT_AXON_OK(axon_device_get_properties(0, &properties));
  void* pointer = reinterpret_cast<void*>(0x1234);
  const size_t request = properties.total_memory + 1;
  EXPECT_AXON_STATUS(AXON_ERROR_OUT_OF_MEMORY, axon_memory_allocate(0, request, &pointer));
  EXPECT_EQ(pointer, reinterpret_cast<void*>(0x1234));
  const std::string message = axon_last_error_message();
  EXPECT_TRUE(contains(message, "[axon_memory_allocate] out of memory on device 0")) << message;
  EXPECT_TRUE(contains(message, "requested " + std::to_string(request) + " bytes")) << message;
  EXPECT_TRUE(contains(message, std::to_string(memory_used(0)) + " in use")) << message;
  EXPECT_TRUE(contains(message, "capacity " + std::to_string(properties.total_memory) + " bytes")) << message;
  EXPECT_AXON_STATUS(AXON_ERROR_OUT_OF_MEMORY, axon_memory_allocate(0, SIZE_MAX, &pointer));
}

TEST(Memory, FreeRejectsForeignInteriorAndFreedPointers) {
  int on_stack = 0;
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_POINTER, axon_memory_free(&on_stack));
  EXPECT_TRUE(contains(axon_last_error_message(), "[axon_memory_free]"));

  void* pointer = nullptr;
  ASSERT_AXON_OK(axon_memory_allocate(0, 4096, &pointer));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_POINTER, axon_memory_free(static_cast<char*>(pointer) + 256));
  EXPECT_TRUE(contains(axon_last_error_message(), "base address")) << axon_last_error_message();
  ASSERT_AXON_OK(axon_memory_free(pointer));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_POINTER, axon_memory_free(pointer));
  EXPECT_TRUE(contains(axon_last_error_message(), "already freed")) << axon_last_error_message();
}

TEST(Memory, FreeOfNullIsANoOp) { EXPECT_AXON_OK(axon_memory_free(nullptr)); }

TEST(Memory, PointerDeviceAcceptsInteriorPointersOfLiveAllocationsOnly) {
  void* pointer = nullptr;
  ASSERT_AXON_OK(axon_memory_allocate(0, 1000, &pointer));
  int device = -1;
  ASSERT_AXON_OK(axon_memory_pointer_device(static_cast<char*>(pointer) + 999, &device));
  EXPECT_EQ(device, 0);
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_memory_pointer_device(pointer, nullptr));
  int on_stack = 0;
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_POINTER, axon_memory_pointer_device(&on_stack, &device));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_POINTER, axon_memory_pointer_device(nullptr, &device));
  ASSERT_AXON_OK(axon_memory_free(pointer));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_POINTER, axon_memory_pointer_device(pointer, &device));
  EXPECT_TRUE(contains(axon_last_error_message(), "not inside a live allocation")) << axon_last_error_message();
}

TEST(Memory, HostViewAliasesTheDeviceBytes) {
  int host_addressable = 0;
  ASSERT_AXON_OK(axon_device_get_capability(0, AXON_CAPABILITY_HOST_ADDRESSABLE_MEMORY, &host_addressable));
  if (!host_addressable) GTEST_SKIP() << "the driver's device memory is not host-addressable";
  void* pointer = nullptr;
  ASSERT_AXON_OK(axon_memory_allocate(0, 4096, &pointer));
  void* view = nullptr;
  ASSERT_AXON_OK(axon_memory_host_view(static_cast<char*>(pointer) + 8, &view));
  EXPECT_EQ(view, static_cast<char*>(pointer) + 8);  // no memory protection in this suite
  static_cast<char*>(view)[0] = 42;
  char back = 0;
  axon_stream stream = nullptr;
  ASSERT_AXON_OK(axon_stream_get_default(0, &stream));
  ASSERT_AXON_OK(axon_memory_copy(&back, static_cast<char*>(pointer) + 8, 1, stream));
  EXPECT_EQ(back, 42);
  int on_stack = 0;
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_POINTER, axon_memory_host_view(&on_stack, &view));
  ASSERT_AXON_OK(axon_memory_free(pointer));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_POINTER, axon_memory_host_view(pointer, &view));
}

TEST(Memory, FreedRangesAreReused) {
  // Allocate and free the same size many times: without reuse the arena would
  // run dry long before the capacity is crossed.
  axon_device_properties properties{};
  ASSERT_AXON_OK(axon_device_get_properties(0, &properties));
  const size_t block = properties.total_memory / 4;
  for (int round = 0; round < 16; ++round) {
    void* pointer = nullptr;
    ASSERT_AXON_OK(axon_memory_allocate(0, block, &pointer));
    ASSERT_AXON_OK(axon_memory_free(pointer));
  }
}
