// Imported host memory (axon_memory_import_host): caller-owned host bytes
// used as device memory without a copy. An optional slot: a driver that
// returns AXON_ERROR_NOT_SUPPORTED skips these tests.

#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "axon_test_support.h"

using axon_test::contains;
using axon_test::DeviceBuffer;
using axon_test::memory_used;
using axon_test::ScopedStream;

// Imports `bytes` of `host` on `device`; skips the test if the driver cannot.
#define IMPORT_OR_SKIP(device, host, bytes, device_pointer)                                             \
  do {                                                                                                  \
    const axon_status import_status_ = axon_memory_import_host(device, host, bytes, device_pointer);    \
    if (import_status_ == AXON_ERROR_NOT_SUPPORTED) GTEST_SKIP() << "driver cannot import host memory"; \
    ASSERT_EQ(import_status_, AXON_SUCCESS) << AXON_STATUS_TEXT(import_status_);                        \
  } while (0)

TEST(MemoryImport, ImportedBytesAreReadThroughTheHostViewWithoutACopy) {
  std::vector<int> host(1000);
  std::iota(host.begin(), host.end(), 0);
  void* device_pointer = nullptr;
  IMPORT_OR_SKIP(1, host.data(), host.size() * sizeof(int), &device_pointer);
  int* view = static_cast<int*>(axon_test::host_view(device_pointer));
  EXPECT_EQ(view, host.data());  // the same bytes, not a copy
  EXPECT_EQ(axon_test::host_view(static_cast<char*>(device_pointer) + 40), host.data() + 10);
  host[7] = -7;
  EXPECT_EQ(view[7], -7);
  ASSERT_AXON_OK(axon_memory_free(device_pointer));
}

TEST(MemoryImport, PointerDeviceNamesTheImportingDeviceForInteriorPointers) {
  std::vector<char> host(4096);
  void* device_pointer = nullptr;
  IMPORT_OR_SKIP(2, host.data(), host.size(), &device_pointer);
  for (size_t offset : {size_t{0}, size_t{1}, size_t{4095}}) {
    int owner = -1;
    ASSERT_AXON_OK(axon_memory_pointer_device(static_cast<char*>(device_pointer) + offset, &owner));
    EXPECT_EQ(owner, 2);
  }
  int owner = -1;
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_POINTER,
                     axon_memory_pointer_device(static_cast<char*>(device_pointer) + 4096, &owner));
  ASSERT_AXON_OK(axon_memory_free(device_pointer));
}

TEST(MemoryImport, CopiesAndSetsTreatImportsAsDeviceMemory) {
  std::vector<unsigned char> host(1024, 0);
  void* imported = nullptr;
  IMPORT_OR_SKIP(0, host.data(), host.size(), &imported);
  ScopedStream stream(0);
  DeviceBuffer device(0, 1024);

  // pageable -> import, import -> device, device -> pageable
  std::vector<unsigned char> source(1024);
  std::iota(source.begin(), source.end(), static_cast<unsigned char>(0));
  ASSERT_AXON_OK(axon_memory_copy(imported, source.data(), 1024, stream));
  EXPECT_EQ(host, source);
  ASSERT_AXON_OK(axon_memory_copy(device.get(), imported, 1024, stream));
  std::vector<unsigned char> result(1024, 0);
  ASSERT_AXON_OK(axon_memory_copy(result.data(), device.get(), 1024, stream));
  EXPECT_EQ(result, source);

  // set into an interior range, then copy the import back out
  ASSERT_AXON_OK(axon_memory_set_async(static_cast<char*>(imported) + 100, 0xAB, 24, stream));
  ASSERT_AXON_OK(axon_memory_copy(result.data(), imported, 1024, stream));
  for (size_t i = 0; i < 1024; ++i) {
    const unsigned char expected = i >= 100 && i < 124 ? 0xAB : static_cast<unsigned char>(i);
    ASSERT_EQ(result[i], expected) << "byte " << i;
  }

  // ranges overrunning the import are refused, as for allocations
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE,
                     axon_memory_copy_async(static_cast<char*>(imported) + 1000, source.data(), 25, stream));
  EXPECT_TRUE(contains(axon_last_error_message(), "overruns its 1024-byte import on device 0"))
      << axon_last_error_message();
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_memory_set_async(imported, 0, 1025, stream));
  ASSERT_AXON_OK(axon_stream_synchronize(stream));
  ASSERT_AXON_OK(axon_memory_free(imported));
}

TEST(MemoryImport, TasksReachImportsThroughTheHostView) {
  int host = 0;
  void* imported = nullptr;
  IMPORT_OR_SKIP(0, &host, sizeof host, &imported);
  ScopedStream stream(0);
  ASSERT_AXON_OK(axon_test::launch(stream, [imported] {
    void* view = nullptr;
    if (axon_memory_host_view(imported, &view) == AXON_SUCCESS) *static_cast<int*>(view) = 4321;
  }));
  ASSERT_AXON_OK(axon_stream_synchronize(stream));
  EXPECT_EQ(host, 4321);
  ASSERT_AXON_OK(axon_memory_free(imported));
}

TEST(MemoryImport, ImportsCountInUsedBytesAtTheirExactSize) {
  const size_t before = memory_used(3);
  std::vector<char> host(1000);
  void* imported = nullptr;
  IMPORT_OR_SKIP(3, host.data(), host.size(), &imported);
  EXPECT_EQ(memory_used(3) - before, 1000u);
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  ASSERT_AXON_OK(axon_device_memory_info(3, &free_bytes, &total_bytes));
  EXPECT_EQ(total_bytes - free_bytes, memory_used(3));
  ASSERT_AXON_OK(axon_memory_free(imported));
  EXPECT_EQ(memory_used(3), before);
}

TEST(MemoryImport, FreeEndsTheImportAndLeavesTheHostBytes) {
  std::vector<char> host(256, 'x');
  void* imported = nullptr;
  IMPORT_OR_SKIP(0, host.data(), host.size(), &imported);
  ASSERT_AXON_OK(axon_memory_free(imported));
  EXPECT_EQ(host[0], 'x');
  host[0] = 'y';  // still the caller's memory
  int owner = -1;
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_POINTER, axon_memory_pointer_device(imported, &owner));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_POINTER, axon_memory_free(imported));  // twice
  // The range is free to import again once the first import ended.
  IMPORT_OR_SKIP(1, host.data(), host.size(), &imported);
  ASSERT_AXON_OK(axon_memory_free(imported));
}

TEST(MemoryImport, InteriorPointersAreNotFreeable) {
  std::vector<char> host(512);
  void* imported = nullptr;
  IMPORT_OR_SKIP(0, host.data(), host.size(), &imported);
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_POINTER, axon_memory_free(static_cast<char*>(imported) + 8));
  EXPECT_TRUE(contains(axon_last_error_message(), "expected that import's base address")) << axon_last_error_message();
  int owner = -1;
  ASSERT_AXON_OK(axon_memory_pointer_device(imported, &owner));  // still live
  ASSERT_AXON_OK(axon_memory_free(imported));
}

TEST(MemoryImport, InvalidArgumentsImportNothing) {
  std::vector<char> host(256);
  const size_t before = memory_used(0);
  void* untouched = reinterpret_cast<void*>(0x1234);
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_memory_import_host(0, nullptr, 16, &untouched));
  EXPECT_TRUE(contains(axon_last_error_message(), "[axon_memory_import_host] expected a non-null host_ptr"))
      << axon_last_error_message();
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_memory_import_host(0, host.data(), 0, &untouched));
  EXPECT_TRUE(contains(axon_last_error_message(), "expected bytes > 0, got 0")) << axon_last_error_message();
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_memory_import_host(0, host.data(), 16, nullptr));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_memory_import_host(0, host.data(), SIZE_MAX, &untouched));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_DEVICE, axon_memory_import_host(-1, host.data(), 16, &untouched));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_DEVICE,
                     axon_memory_import_host(axon_test::device_count(), host.data(), 16, &untouched));
  EXPECT_EQ(untouched, reinterpret_cast<void*>(0x1234));
  EXPECT_EQ(memory_used(0), before);
}

TEST(MemoryImport, OverlappingImportsAndDeviceMemoryAreRefused) {
  std::vector<char> host(1024);
  void* imported = nullptr;
  IMPORT_OR_SKIP(0, host.data(), 512, &imported);
  const size_t used = memory_used(0);
  void* other = reinterpret_cast<void*>(0x1234);
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_memory_import_host(0, host.data() + 511, 10, &other));
  EXPECT_TRUE(contains(axon_last_error_message(), "overlaps the live import")) << axon_last_error_message();
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_memory_import_host(1, host.data(), 512, &other));
  EXPECT_EQ(other, reinterpret_cast<void*>(0x1234));
  EXPECT_EQ(memory_used(0), used);  // the refused imports were not charged
  // The neighbouring bytes are importable.
  ASSERT_AXON_OK(axon_memory_import_host(0, host.data() + 512, 512, &other));
  ASSERT_AXON_OK(axon_memory_free(other));
  ASSERT_AXON_OK(axon_memory_free(imported));

  DeviceBuffer device(0, 256);
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_memory_import_host(1, device.get(), 256, &other));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE,
                     axon_memory_import_host(1, axon_test::host_view(device.get()), 256, &other));
}

TEST(MemoryImport, PinnedHostMemoryCanBeImported) {
  void* pinned = nullptr;
  ASSERT_AXON_OK(axon_host_allocate(4096, &pinned));
  void* imported = nullptr;
  const axon_status status = axon_memory_import_host(0, pinned, 4096, &imported);
  if (status == AXON_ERROR_NOT_SUPPORTED) {
    ASSERT_AXON_OK(axon_host_free(pinned));
    GTEST_SKIP() << "driver cannot import host memory";
  }
  ASSERT_EQ(status, AXON_SUCCESS) << AXON_STATUS_TEXT(status);
  ScopedStream stream(0);
  EXPECT_AXON_OK(axon_memory_set_async(imported, 7, 4096, stream));  // device memory now
  EXPECT_AXON_OK(axon_stream_synchronize(stream));
  EXPECT_EQ(static_cast<unsigned char*>(pinned)[4095], 7);
  ASSERT_AXON_OK(axon_memory_free(imported));
  ASSERT_AXON_OK(axon_host_free(pinned));
}
