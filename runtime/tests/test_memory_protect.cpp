// AXON_MEMORY_PROTECT=1: device pointers fault when host code dereferences
// them, while copies, tasks and host views keep working.

#include <csignal>
#include <cstdlib>
#include <cstring>

#include "axon_test_support.h"

using axon_test::DeviceBuffer;
using axon_test::ScopedStream;

TEST(MemoryProtect, PropertiesSayProtected) {
  axon_device_properties properties{};
  ASSERT_AXON_OK(axon_device_get_properties(0, &properties));
  EXPECT_EQ(properties.memory_protected, 1);
}

TEST(MemoryProtect, HostViewIsADifferentAddressForTheSameBytes) {
  DeviceBuffer device(0, 4096);
  ScopedStream stream(0);
  char* view = static_cast<char*>(axon_test::host_view(device.get()));
  ASSERT_NE(view, nullptr);
  EXPECT_NE(static_cast<void*>(view), device.get());
  EXPECT_EQ(axon_test::host_view(device.as<char>() + 100), view + 100);
  std::strcpy(view, "through the host view");
  char result[32] = {};
  ASSERT_AXON_OK(axon_memory_copy(result, device.get(), sizeof result, stream));
  EXPECT_STREQ(result, "through the host view");
  int owner = -1;
  ASSERT_AXON_OK(axon_memory_pointer_device(device.as<char>() + 4095, &owner));
  EXPECT_EQ(owner, 0);
}

TEST(MemoryProtect, TasksReachDeviceMemoryThroughTheHostView) {
  DeviceBuffer device(0, sizeof(int));
  ScopedStream stream(0);
  void* pointer = device.get();
  ASSERT_AXON_OK(axon_test::launch(stream, [pointer] {
    void* view = nullptr;
    if (axon_memory_host_view(pointer, &view) == AXON_SUCCESS) *static_cast<int*>(view) = 1234;
  }));
  int result = 0;
  ASSERT_AXON_OK(axon_memory_copy(&result, device.get(), sizeof result, stream));
  EXPECT_EQ(result, 1234);
}

// Sanitizers catch the fault themselves and exit with a "SEGV" report
// instead of dying by the signal.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define AXON_EXPECT_SEGMENTATION_FAULT(statement) EXPECT_DEATH(statement, "SEGV")
#else
#define AXON_EXPECT_SEGMENTATION_FAULT(statement) EXPECT_EXIT(statement, testing::KilledBySignal(SIGSEGV), "")
#endif

TEST(MemoryProtectDeathTest, DereferencingADevicePointerFromHostCodeFaults) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the driver runs threads
  AXON_EXPECT_SEGMENTATION_FAULT({
    void* pointer = nullptr;
    if (axon_memory_allocate(0, 256, &pointer) != AXON_SUCCESS) std::_Exit(1);
    *static_cast<volatile int*>(pointer) = 1;
    std::_Exit(2);  // reached only if the write went through
  });
}

TEST(MemoryProtect, ImportedMemoryHasNoSeparateProtectedView) {
  int host[4] = {1, 2, 3, 4};
  void* imported = nullptr;
  const axon_status status = axon_memory_import_host(0, host, sizeof host, &imported);
  if (status == AXON_ERROR_NOT_SUPPORTED) GTEST_SKIP() << "driver cannot import host memory";
  ASSERT_EQ(status, AXON_SUCCESS) << AXON_STATUS_TEXT(status);
  EXPECT_EQ(imported, static_cast<void*>(host));
  EXPECT_EQ(axon_test::host_view(imported), static_cast<void*>(host));
  EXPECT_EQ(static_cast<int*>(imported)[2], 3);  // dereferenceable: no fault for imports
  ScopedStream stream(0);
  DeviceBuffer device(0, sizeof host);
  ASSERT_AXON_OK(axon_memory_copy(device.get(), imported, sizeof host, stream));
  int result[4] = {};
  ASSERT_AXON_OK(axon_memory_copy(result, device.get(), sizeof result, stream));
  EXPECT_EQ(result[3], 4);
  ASSERT_AXON_OK(axon_memory_free(imported));
}
