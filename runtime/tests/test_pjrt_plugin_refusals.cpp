// The PJRT driver with a plugin it cannot use: a missing file, a library that
// is not a plugin, another PJRT major version, a table too old, a client that
// cannot be created, or no plugin named at all. Every call then fails with the
// same status and detail, which says what is wrong, instead of crashing. CTest
// runs this suite once per case and passes words the detail must contain in
// AXON_TEST_EXPECTED_DETAIL, and the status when it is not AXON_ERROR_SYSTEM in
// AXON_TEST_EXPECTED_STATUS.

#include <cstdlib>
#include <string>

#include "axon_test_support.h"

namespace {

void expect_refusal(axon_status status, const char* call) {
  const char* expected_status = std::getenv("AXON_TEST_EXPECTED_STATUS");
  EXPECT_STREQ(axon_status_name(status), expected_status != nullptr ? expected_status : "AXON_ERROR_SYSTEM") << call;
  const std::string message = axon_last_error_message();
  const char* expected = std::getenv("AXON_TEST_EXPECTED_DETAIL");
  ASSERT_NE(expected, nullptr) << "the test environment must say what the detail contains";
  EXPECT_EQ(message.rfind(std::string("[") + call + "] driver initialization failed", 0), 0u) << message;
  EXPECT_NE(message.find(expected), std::string::npos) << message;
}

}  // namespace

TEST(PjrtPluginRefusal, EveryCallReportsWhyThePluginCannotBeUsed) {
  int count = 0;
  expect_refusal(axon_device_count(&count), "axon_device_count");
  expect_refusal(axon_device_count(&count), "axon_device_count");  // remembered, not retried
  void* pointer = nullptr;
  expect_refusal(axon_memory_allocate(0, 16, &pointer), "axon_memory_allocate");
  axon_stream stream = nullptr;
  expect_refusal(axon_stream_get_default(0, &stream), "axon_stream_get_default");
  int on_stack = 0;
  expect_refusal(axon_memory_free(&on_stack), "axon_memory_free");
}
