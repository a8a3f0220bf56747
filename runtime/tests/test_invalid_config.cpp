// A malformed AXON_* variable: every call fails with AXON_ERROR_INVALID_VALUE
// and names the variable, instead of crashing. CTest runs this suite once per
// malformed variable and passes its name in AXON_TEST_MALFORMED_VARIABLE.

#include <cstdlib>
#include <string>

#include "axon_test_support.h"

namespace {

void expect_configuration_failure(axon_status status, const char* call) {
  EXPECT_EQ(status, AXON_ERROR_INVALID_VALUE) << call << " returned " << axon_status_name(status);
  const std::string message = axon_last_error_message();
  const char* variable = std::getenv("AXON_TEST_MALFORMED_VARIABLE");
  ASSERT_NE(variable, nullptr) << "the test environment must name the malformed variable";
  EXPECT_EQ(message.rfind(std::string("[") + call + "] driver initialization failed", 0), 0u) << message;
  EXPECT_NE(message.find(variable), std::string::npos) << message;
}

}  // namespace

TEST(InvalidConfig, EveryCallReportsTheMalformedVariable) {
  int count = 0;
  expect_configuration_failure(axon_device_count(&count), "axon_device_count");
  axon_device_properties properties{};
  expect_configuration_failure(axon_device_get_properties(0, &properties), "axon_device_get_properties");
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  expect_configuration_failure(axon_device_memory_info(0, &free_bytes, &total_bytes), "axon_device_memory_info");
  void* pointer = nullptr;
  expect_configuration_failure(axon_memory_allocate(0, 16, &pointer), "axon_memory_allocate");
  int on_stack = 0;
  expect_configuration_failure(axon_memory_free(&on_stack), "axon_memory_free");
  expect_configuration_failure(axon_host_allocate(16, &pointer), "axon_host_allocate");
  axon_stream stream = nullptr;
  expect_configuration_failure(axon_stream_get_default(0, &stream), "axon_stream_get_default");
  expect_configuration_failure(axon_stream_create(0, 0, &stream), "axon_stream_create");
  int least = 0;
  int most = 0;
  expect_configuration_failure(axon_stream_priority_range(&least, &most), "axon_stream_priority_range");
  axon_event event = nullptr;
  expect_configuration_failure(axon_event_create(0, &event), "axon_event_create");
  expect_configuration_failure(axon_device_synchronize(0), "axon_device_synchronize");
  expect_configuration_failure(axon_runtime_shutdown(), "axon_runtime_shutdown");
  EXPECT_EQ(axon_runtime_is_shut_down(), 0);
}
