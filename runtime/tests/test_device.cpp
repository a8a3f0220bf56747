// Device enumeration, properties, memory info and device-wide synchronization.

#include <string>

#include "axon_test_support.h"

using axon_test::device_count;

TEST(Device, CountIsPositiveAndStable) {
  int first = 0;
  int second = 0;
  ASSERT_AXON_OK(axon_device_count(&first));
  ASSERT_AXON_OK(axon_device_count(&second));
  EXPECT_GT(first, 0);
  EXPECT_EQ(first, second);
}

TEST(Device, PropertiesDescribeEveryDevice) {
  for (int device = 0; device < device_count(); ++device) {
    axon_device_properties properties{};
    ASSERT_AXON_OK(axon_device_get_properties(device, &properties));
    EXPECT_GT(std::string(properties.name).size(), 0u);
    EXPECT_LT(std::string(properties.name).size(), sizeof(properties.name));
    EXPECT_GT(properties.total_memory, 0u);
    EXPECT_LE(properties.stream_priority_high, 0);
    EXPECT_GE(properties.stream_priority_low, 0);
    EXPECT_EQ(properties.launch_blocking, 0);
    EXPECT_GE(properties.compute_units, 1);
    // Host code can touch device memory only where the driver says it is
    // host-addressable (the emulated driver without AXON_MEMORY_PROTECT);
    // a driver whose memory lives elsewhere (PJRT buffers) reports it protected.
    int host_addressable = -1;
    ASSERT_AXON_OK(axon_device_get_capability(device, AXON_CAPABILITY_HOST_ADDRESSABLE_MEMORY, &host_addressable));
    EXPECT_EQ(properties.memory_protected, host_addressable == 1 ? 0 : 1);

    int least = 1;
    int most = 1;
    ASSERT_AXON_OK(axon_stream_priority_range(&least, &most));
    EXPECT_EQ(least, properties.stream_priority_low);
    EXPECT_EQ(most, properties.stream_priority_high);
  }
}

TEST(Device, OutOfRangeDevicesAreRejectedWithTheValidRange) {
  const int count = device_count();
  axon_device_properties properties{};
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_DEVICE, axon_device_get_properties(count, &properties));
  const std::string message = axon_last_error_message();
  EXPECT_NE(message.find("[axon_device_get_properties]"), std::string::npos) << message;
  EXPECT_NE(message.find("invalid device " + std::to_string(count)), std::string::npos) << message;
  EXPECT_NE(message.find("< " + std::to_string(count)), std::string::npos) << message;

  size_t free_bytes = 0;
  size_t total_bytes = 0;
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_DEVICE, axon_device_get_properties(-1, &properties));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_DEVICE, axon_device_memory_info(-1, &free_bytes, &total_bytes));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_DEVICE, axon_device_memory_info(count, &free_bytes, &total_bytes));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_DEVICE, axon_device_synchronize(count));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_DEVICE, axon_device_synchronize(-7));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_device_get_properties(0, nullptr));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_device_memory_info(0, nullptr, &total_bytes));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_device_memory_info(0, &free_bytes, nullptr));
}

TEST(Device, MemoryInfoMatchesCapacityAndUse) {
  axon_device_properties properties{};
  ASSERT_AXON_OK(axon_device_get_properties(0, &properties));
  size_t free_before = 0;
  size_t total = 0;
  ASSERT_AXON_OK(axon_device_memory_info(0, &free_before, &total));
  EXPECT_EQ(total, properties.total_memory);
  size_t used = 0;
  ASSERT_AXON_OK(axon_memory_used(0, &used));
  EXPECT_EQ(free_before + used, total);

  void* pointer = nullptr;
  ASSERT_AXON_OK(axon_memory_allocate(0, 1 << 20, &pointer));
  size_t free_during = 0;
  ASSERT_AXON_OK(axon_device_memory_info(0, &free_during, &total));
  EXPECT_EQ(free_before - free_during, size_t{1} << 20);
  ASSERT_AXON_OK(axon_memory_free(pointer));
  size_t free_after = 0;
  ASSERT_AXON_OK(axon_device_memory_info(0, &free_after, &total));
  EXPECT_EQ(free_after, free_before);
}

TEST(Device, SynchronizeWaitsForEveryStreamOfTheDevice) {
  axon_test::ScopedStream first(0);
  axon_test::ScopedStream second(0, -1);
  axon_stream default_stream = nullptr;
  ASSERT_AXON_OK(axon_stream_get_default(0, &default_stream));
  std::atomic<int> finished{0};
  for (axon_stream stream : {first.get(), second.get(), default_stream}) {
    for (int i = 0; i < 50; ++i) ASSERT_AXON_OK(axon_test::launch(stream, [&] { ++finished; }));
  }
  ASSERT_AXON_OK(axon_device_synchronize(0));
  EXPECT_EQ(finished.load(), 150);
  for (int device = 0; device < device_count(); ++device) ASSERT_AXON_OK(axon_device_synchronize(device));
}
