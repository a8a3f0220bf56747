// Status names and the per-thread error detail.

#include <string>
#include <thread>

#include "axon_test_support.h"

TEST(Status, EveryStatusHasItsName) {
  EXPECT_STREQ(axon_status_name(AXON_SUCCESS), "AXON_SUCCESS");
  EXPECT_STREQ(axon_status_name(AXON_ERROR_INVALID_VALUE), "AXON_ERROR_INVALID_VALUE");
  EXPECT_STREQ(axon_status_name(AXON_ERROR_INVALID_DEVICE), "AXON_ERROR_INVALID_DEVICE");
  EXPECT_STREQ(axon_status_name(AXON_ERROR_INVALID_HANDLE), "AXON_ERROR_INVALID_HANDLE");
  EXPECT_STREQ(axon_status_name(AXON_ERROR_OUT_OF_MEMORY), "AXON_ERROR_OUT_OF_MEMORY");
  EXPECT_STREQ(axon_status_name(AXON_ERROR_INVALID_POINTER), "AXON_ERROR_INVALID_POINTER");
  EXPECT_STREQ(axon_status_name(AXON_ERROR_NOT_READY), "AXON_ERROR_NOT_READY");
  EXPECT_STREQ(axon_status_name(AXON_ERROR_TASK_FAILED), "AXON_ERROR_TASK_FAILED");
  EXPECT_STREQ(axon_status_name(AXON_ERROR_INVALID_EVENT_STATE), "AXON_ERROR_INVALID_EVENT_STATE");
  EXPECT_STREQ(axon_status_name(AXON_ERROR_SHUT_DOWN), "AXON_ERROR_SHUT_DOWN");
  EXPECT_STREQ(axon_status_name(AXON_ERROR_SYSTEM), "AXON_ERROR_SYSTEM");
  EXPECT_STREQ(axon_status_name(AXON_ERROR_NOT_SUPPORTED), "AXON_ERROR_NOT_SUPPORTED");
  EXPECT_STREQ(axon_status_name(AXON_ERROR_TASK_OUT_OF_RANGE), "AXON_ERROR_TASK_OUT_OF_RANGE");
  EXPECT_STREQ(axon_status_name(AXON_ERROR_TASK_NUMERICAL), "AXON_ERROR_TASK_NUMERICAL");
  EXPECT_STREQ(axon_status_name(static_cast<axon_status>(1234)), "AXON_ERROR_UNKNOWN_STATUS");
}

TEST(Status, ErrorDetailNamesTheCallAndIsPerThread) {
  std::string other_thread_message = "unset";
  std::thread([&] { other_thread_message = axon_last_error_message(); }).join();
  EXPECT_EQ(other_thread_message, "");

  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_DEVICE, axon_memory_allocate(-1, 16, nullptr));
  const std::string message = axon_last_error_message();
  EXPECT_EQ(message.rfind("[axon_memory_allocate] ", 0), 0u) << message;
  EXPECT_NE(message.find("-1"), std::string::npos) << message;

  std::thread([&] { other_thread_message = axon_last_error_message(); }).join();
  EXPECT_EQ(other_thread_message, "");
}

TEST(Status, NullOutputsAreInvalidValues) {
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_device_count(nullptr));
  EXPECT_NE(std::string(axon_last_error_message()).find("count"), std::string::npos);
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_stream_priority_range(nullptr, nullptr));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_event_create(0, nullptr));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_host_allocate(16, nullptr));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_memory_host_view(nullptr, nullptr));
}
