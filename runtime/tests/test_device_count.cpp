// AXON_DEVICE_COUNT: the configured number of devices, zero included. CTest
// runs this suite once per count.

#include <cstdlib>
#include <string>

#include "axon_test_support.h"

TEST(DeviceCount, MatchesTheEnvironment) {
  const char* configured = std::getenv("AXON_DEVICE_COUNT");
  ASSERT_NE(configured, nullptr);
  const int expected = std::stoi(configured);
  int count = -1;
  ASSERT_AXON_OK(axon_device_count(&count));
  EXPECT_EQ(count, expected);

  axon_device_properties properties{};
  axon_stream stream = nullptr;
  void* pointer = nullptr;
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_DEVICE, axon_device_get_properties(count, &properties));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_DEVICE, axon_stream_get_default(count, &stream));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_DEVICE, axon_memory_allocate(count, 16, &pointer));
  for (int device = 0; device < count; ++device) {
    ASSERT_AXON_OK(axon_device_get_properties(device, &properties));
    ASSERT_AXON_OK(axon_stream_get_default(device, &stream));
  }
  // Host-only calls work without any device.
  ASSERT_AXON_OK(axon_host_allocate(64, &pointer));
  ASSERT_AXON_OK(axon_host_free(pointer));
  ASSERT_AXON_OK(axon_runtime_shutdown());
}
