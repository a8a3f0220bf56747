// AXON_LAUNCH_BLOCKING=1: every submission has finished when its call returns.

#include <string>

#include "axon_test_support.h"

using axon_test::ScopedStream;

TEST(LaunchBlocking, PropertiesSayBlocking) {
  axon_device_properties properties{};
  ASSERT_AXON_OK(axon_device_get_properties(0, &properties));
  EXPECT_EQ(properties.launch_blocking, 1);
}

TEST(LaunchBlocking, LaunchReturnsAfterTheTaskRan) {
  ScopedStream stream(0);
  bool ran = false;
  ASSERT_AXON_OK(axon_test::launch(stream, [&] { ran = true; }));
  EXPECT_TRUE(ran);
  EXPECT_AXON_OK(axon_stream_query(stream));
}

TEST(LaunchBlocking, LaunchReturnsTheTasksOwnFailureAndLeavesNoPendingError) {
  ScopedStream stream(0);
  axon_test::ReleaseCounter counter;
  const axon_status status = axon_stream_launch_host_function(stream, axon_test::make_task(
                                                                          [](char* message) {
                                                                            message[0] = 'x';
                                                                            message[1] = '\0';
                                                                            return AXON_ERROR_INVALID_VALUE;
                                                                          },
                                                                          &counter));
  EXPECT_EQ(status, AXON_ERROR_TASK_FAILED);
  const std::string message = axon_last_error_message();
  EXPECT_EQ(message.rfind("[axon_stream_launch_host_function] task failed on stream", 0), 0u) << message;
  EXPECT_NE(message.find("AXON_ERROR_INVALID_VALUE: x"), std::string::npos) << message;
  EXPECT_EQ(counter.count.load(), 1);
  EXPECT_AXON_OK(axon_stream_synchronize(stream));
  EXPECT_AXON_OK(axon_device_synchronize(0));
}

TEST(LaunchBlocking, CopiesSetsAndRecordsHaveCompletedOnReturn) {
  ScopedStream stream(0);
  axon_test::DeviceBuffer device(0, 64);
  ASSERT_AXON_OK(axon_memory_set_async(device.get(), 3, 64, stream));
  unsigned char result[64] = {};
  ASSERT_AXON_OK(axon_memory_copy_async(result, device.get(), 64, stream));
  EXPECT_EQ(result[0], 3);
  EXPECT_EQ(result[63], 3);
  axon_event event = nullptr;
  ASSERT_AXON_OK(axon_event_create(0, &event));
  ASSERT_AXON_OK(axon_event_record(event, stream));
  EXPECT_AXON_OK(axon_event_query(event));
  ASSERT_AXON_OK(axon_stream_wait_event(stream, event));
  ASSERT_AXON_OK(axon_event_destroy(event));
}
