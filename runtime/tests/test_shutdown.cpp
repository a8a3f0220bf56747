// axon_runtime_shutdown: drains queued work, then refuses every call except frees.

#include <chrono>
#include <string>
#include <thread>

#include "axon_test_support.h"

TEST(Shutdown, DrainsQueuedWorkThenRefusesCalls) {
  ASSERT_EQ(axon_runtime_is_shut_down(), 0);
  axon_stream stream = nullptr;
  ASSERT_AXON_OK(axon_stream_create(0, 0, &stream));
  void* device_memory = nullptr;
  void* pinned = nullptr;
  ASSERT_AXON_OK(axon_memory_allocate(0, 4096, &device_memory));
  ASSERT_AXON_OK(axon_host_allocate(4096, &pinned));
  axon_event event = nullptr;
  ASSERT_AXON_OK(axon_event_create(0, &event));

  axon_test::Gate gate;
  axon_test::ReleaseCounter counter;
  ASSERT_AXON_OK(gate.hold(stream));
  std::atomic<bool> ran{false};
  ASSERT_AXON_OK(axon_stream_launch_host_function(stream, axon_test::make_task(
                                                              [&](char*) {
                                                                ran = true;
                                                                return AXON_SUCCESS;
                                                              },
                                                              &counter)));
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    gate.open();
  });
  ASSERT_AXON_OK(axon_runtime_shutdown());
  opener.join();
  EXPECT_TRUE(ran.load());
  EXPECT_EQ(counter.count.load(), 1);
  EXPECT_EQ(axon_runtime_is_shut_down(), 1);

  int count = 0;
  EXPECT_AXON_STATUS(AXON_ERROR_SHUT_DOWN, axon_device_count(&count));
  const std::string message = axon_last_error_message();
  EXPECT_EQ(message.rfind("[axon_device_count] ", 0), 0u) << message;
  EXPECT_NE(message.find("shut down"), std::string::npos) << message;
  void* pointer = nullptr;
  EXPECT_AXON_STATUS(AXON_ERROR_SHUT_DOWN, axon_memory_allocate(0, 16, &pointer));
  EXPECT_AXON_STATUS(AXON_ERROR_SHUT_DOWN, axon_host_allocate(16, &pointer));
  EXPECT_AXON_STATUS(AXON_ERROR_SHUT_DOWN, axon_stream_synchronize(stream));
  EXPECT_AXON_STATUS(AXON_ERROR_SHUT_DOWN, axon_stream_create(0, 0, &stream));
  EXPECT_AXON_STATUS(AXON_ERROR_SHUT_DOWN, axon_event_record(event, stream));
  EXPECT_AXON_STATUS(AXON_ERROR_SHUT_DOWN, axon_device_synchronize(0));
  EXPECT_AXON_STATUS(AXON_ERROR_SHUT_DOWN, axon_memory_copy_async(&count, &count, 4, stream));

  // A launch refused by shutdown still releases its task.
  EXPECT_AXON_STATUS(
      AXON_ERROR_SHUT_DOWN,
      axon_stream_launch_host_function(stream, axon_test::make_task([](char*) { return AXON_SUCCESS; }, &counter)));
  EXPECT_EQ(counter.count.load(), 2);

  // Late owners free without failing, whatever they hold.
  EXPECT_AXON_OK(axon_memory_free(device_memory));
  EXPECT_AXON_OK(axon_host_free(pinned));
  EXPECT_AXON_OK(axon_memory_free(&count));
  EXPECT_AXON_OK(axon_runtime_shutdown());
}

TEST(Shutdown, IsIdempotent) {
  EXPECT_AXON_OK(axon_runtime_shutdown());
  EXPECT_AXON_OK(axon_runtime_shutdown());
  EXPECT_EQ(axon_runtime_is_shut_down(), 1);
}
