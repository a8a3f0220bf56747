// Task failures, pending errors and the exactly-once release of tasks.

#include <stdexcept>
#include <string>

#include "axon_test_support.h"

using axon_test::contains;
using axon_test::ReleaseCounter;
using axon_test::ScopedStream;

TEST(TaskFailure, IsReportedOnceBySynchronizeThenCleared) {
  ScopedStream stream(0);
  ASSERT_AXON_OK(axon_test::launch_failing(stream, AXON_ERROR_INVALID_VALUE, "shape mismatch"));
  std::atomic<bool> later_ran{false};
  ASSERT_AXON_OK(axon_test::launch(stream, [&] { later_ran = true; }));  // a failure does not stop the stream
  EXPECT_AXON_STATUS(AXON_ERROR_TASK_FAILED, axon_stream_synchronize(stream));
  const std::string message = axon_last_error_message();
  EXPECT_TRUE(contains(message, "[axon_stream_synchronize] task failed on stream")) << message;
  EXPECT_TRUE(contains(message, "AXON_ERROR_INVALID_VALUE")) << message;
  EXPECT_TRUE(contains(message, "shape mismatch")) << message;
  EXPECT_TRUE(later_ran.load());
  EXPECT_AXON_OK(axon_stream_synchronize(stream));
  EXPECT_AXON_OK(axon_stream_query(stream));
}

TEST(TaskFailure, ANamedKindOfFailureIsReportedAsThatStatus) {
  ScopedStream stream(0);
  ASSERT_AXON_OK(axon_test::launch_failing(stream, AXON_ERROR_TASK_OUT_OF_RANGE, "index 9 is out of bounds"));
  EXPECT_AXON_STATUS(AXON_ERROR_TASK_OUT_OF_RANGE, axon_stream_synchronize(stream));
  EXPECT_TRUE(contains(axon_last_error_message(), "index 9 is out of bounds")) << axon_last_error_message();
  ASSERT_AXON_OK(axon_test::launch_failing(stream, AXON_ERROR_TASK_NUMERICAL, "singular matrix"));
  EXPECT_AXON_STATUS(AXON_ERROR_TASK_NUMERICAL, axon_device_synchronize(0));
  ASSERT_AXON_OK(axon_test::launch_failing(stream, AXON_ERROR_TASK_WRONG_TYPE, "expected floats"));
  int result = 0;
  axon_test::DeviceBuffer device(0, sizeof result);
  EXPECT_AXON_STATUS(AXON_ERROR_TASK_WRONG_TYPE, axon_memory_copy(&result, device.get(), sizeof result, stream));
  EXPECT_AXON_OK(axon_stream_synchronize(stream));
  EXPECT_TRUE(axon_status_is_task_failure(AXON_ERROR_TASK_FAILED));
  EXPECT_TRUE(axon_status_is_task_failure(AXON_ERROR_TASK_UNSUPPORTED));
  EXPECT_FALSE(axon_status_is_task_failure(AXON_ERROR_INVALID_VALUE));
}

TEST(TaskFailure, IsReportedOnceByQuery) {
  ScopedStream stream(0);
  ASSERT_AXON_OK(axon_test::launch_failing(stream, AXON_ERROR_OUT_OF_MEMORY, "scratch too small"));
  // Drain without consuming the error: device_synchronize would consume it.
  axon_event event = nullptr;
  ASSERT_AXON_OK(axon_event_create(0, &event));
  ASSERT_AXON_OK(axon_event_record(event, stream));
  ASSERT_AXON_OK(axon_event_synchronize(event));
  ASSERT_AXON_OK(axon_event_destroy(event));
  EXPECT_AXON_STATUS(AXON_ERROR_TASK_FAILED, axon_stream_query(stream));
  EXPECT_TRUE(contains(axon_last_error_message(), "scratch too small"));
  EXPECT_AXON_OK(axon_stream_query(stream));
}

TEST(TaskFailure, TheFirstFailureIsKept) {
  ScopedStream stream(0);
  ASSERT_AXON_OK(axon_test::launch_failing(stream, AXON_ERROR_INVALID_VALUE, "first failure"));
  ASSERT_AXON_OK(axon_test::launch_failing(stream, AXON_ERROR_INVALID_VALUE, "second failure"));
  EXPECT_AXON_STATUS(AXON_ERROR_TASK_FAILED, axon_stream_synchronize(stream));
  EXPECT_TRUE(contains(axon_last_error_message(), "first failure")) << axon_last_error_message();
  EXPECT_AXON_OK(axon_stream_synchronize(stream));
}

TEST(TaskFailure, DeviceSynchronizeReportsTheEarliestAndClearsAll) {
  ScopedStream first(0);
  ScopedStream second(0);
  ASSERT_AXON_OK(axon_test::launch_failing(first, AXON_ERROR_INVALID_VALUE, "earlier"));
  ASSERT_AXON_OK(axon_test::launch_failing(second, AXON_ERROR_INVALID_VALUE, "later"));
  EXPECT_AXON_STATUS(AXON_ERROR_TASK_FAILED, axon_device_synchronize(0));
  const std::string message = axon_last_error_message();
  EXPECT_TRUE(contains(message, "[axon_device_synchronize]")) << message;
  EXPECT_TRUE(contains(message, "earlier")) << message;
  EXPECT_AXON_OK(axon_stream_synchronize(first));
  EXPECT_AXON_OK(axon_stream_synchronize(second));
  EXPECT_AXON_OK(axon_device_synchronize(0));
}

TEST(TaskFailure, FailureOfADestroyedStreamGoesToTheDevice) {
  axon_stream stream = nullptr;
  ASSERT_AXON_OK(axon_stream_create(0, 0, &stream));
  ASSERT_AXON_OK(axon_test::launch_failing(stream, AXON_ERROR_INVALID_VALUE, "orphaned"));
  ASSERT_AXON_OK(axon_stream_destroy(stream));
  EXPECT_AXON_STATUS(AXON_ERROR_TASK_FAILED, axon_device_synchronize(0));
  EXPECT_TRUE(contains(axon_last_error_message(), "orphaned")) << axon_last_error_message();
  EXPECT_AXON_OK(axon_device_synchronize(0));
}

TEST(TaskFailure, AThrownExceptionIsAFailureWithItsWhat) {
  ScopedStream stream(0);
  ASSERT_AXON_OK(axon_stream_launch_host_function(
      stream, axon_test::make_task([](char*) -> axon_status { throw std::runtime_error("kernel exploded"); })));
  EXPECT_AXON_STATUS(AXON_ERROR_TASK_FAILED, axon_stream_synchronize(stream));
  EXPECT_TRUE(contains(axon_last_error_message(), "kernel exploded")) << axon_last_error_message();
}

TEST(TaskFailure, AFailureWithoutMessageStillSaysSo) {
  ScopedStream stream(0);
  ASSERT_AXON_OK(
      axon_stream_launch_host_function(stream, axon_test::make_task([](char*) { return AXON_ERROR_INVALID_VALUE; })));
  EXPECT_AXON_STATUS(AXON_ERROR_TASK_FAILED, axon_stream_synchronize(stream));
  EXPECT_TRUE(contains(axon_last_error_message(), "no message")) << axon_last_error_message();
}

TEST(TaskRelease, IsCalledExactlyOnceOnEveryPath) {
  ScopedStream stream(0);
  ReleaseCounter counter;
  ASSERT_AXON_OK(
      axon_stream_launch_host_function(stream, axon_test::make_task([](char*) { return AXON_SUCCESS; }, &counter)));
  ASSERT_AXON_OK(axon_stream_launch_host_function(
      stream, axon_test::make_task([](char*) { return AXON_ERROR_INVALID_VALUE; }, &counter)));
  ASSERT_AXON_OK(axon_stream_launch_host_function(
      stream, axon_test::make_task([](char*) -> axon_status { throw std::runtime_error("x"); }, &counter)));
  EXPECT_AXON_STATUS(AXON_ERROR_TASK_FAILED, axon_stream_synchronize(stream));
  // Released before completion is published: synchronize sees all three.
  EXPECT_EQ(counter.count.load(), 3);

  EXPECT_AXON_STATUS(
      AXON_ERROR_INVALID_HANDLE,
      axon_stream_launch_host_function(nullptr, axon_test::make_task([](char*) { return AXON_SUCCESS; }, &counter)));
  EXPECT_EQ(counter.count.load(), 4);
  axon_host_function without_run = axon_test::make_task([](char*) { return AXON_SUCCESS; }, &counter);
  without_run.run = nullptr;
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_stream_launch_host_function(stream, without_run));
  EXPECT_EQ(counter.count.load(), 5);

  // A task without a release function is fine too.
  ASSERT_AXON_OK(axon_stream_launch_host_function(
      stream, axon_host_function{[](void*, char*) { return AXON_SUCCESS; }, nullptr, nullptr}));
  ASSERT_AXON_OK(axon_stream_synchronize(stream));
  EXPECT_EQ(counter.count.load(), 5);
}

TEST(TaskFailure, WaitingFromInsideATaskIsRefusedInsteadOfDeadlocking) {
  ScopedStream stream(0);
  axon_status inner = AXON_SUCCESS;
  std::string inner_message;
  axon_stream target = stream.get();
  ASSERT_AXON_OK(axon_test::launch(stream, [&] {
    inner = axon_stream_synchronize(target);
    inner_message = axon_last_error_message();
  }));
  ASSERT_AXON_OK(axon_stream_synchronize(stream));
  EXPECT_EQ(inner, AXON_ERROR_INVALID_VALUE);
  EXPECT_TRUE(contains(inner_message, "deadlock")) << inner_message;
}

TEST(TaskFailure, SynchronousCopyReportsAnEarlierFailureOnce) {
  ScopedStream stream(0);
  axon_test::DeviceBuffer device(0, sizeof(int));
  ASSERT_AXON_OK(axon_test::launch_failing(stream, AXON_ERROR_INVALID_VALUE, "before the copy"));
  int result = 0;
  EXPECT_AXON_STATUS(AXON_ERROR_TASK_FAILED, axon_memory_copy(&result, device.get(), sizeof result, stream));
  EXPECT_TRUE(contains(axon_last_error_message(), "[axon_memory_copy] task failed")) << axon_last_error_message();
  EXPECT_TRUE(contains(axon_last_error_message(), "before the copy")) << axon_last_error_message();
  EXPECT_AXON_OK(axon_stream_synchronize(stream));
}
