// Activity records (axon/activity.h): each finished piece of marked work is
// recorded once, with its kind, stream, bytes, the queueing thread's tag and
// label, and times that follow stream order.

#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "axon_test_support.h"

using axon_test::DeviceBuffer;
using axon_test::Gate;
using axon_test::ScopedStream;

namespace {

std::int64_t realtime_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Collects every waiting record, a few at a time to exercise paging.
std::vector<axon_activity_record> collect_all() {
  std::vector<axon_activity_record> all;
  axon_activity_record page[3];
  for (;;) {
    size_t count = 0;
    size_t dropped = 99;
    EXPECT_AXON_OK(axon_activity_collect(page, sizeof(axon_activity_record), 3, &count, &dropped));
    EXPECT_EQ(dropped, 0u);
    all.insert(all.end(), page, page + count);
    if (count < 3) return all;
  }
}

// Starts recording for one test and stops it after, whatever happens; skips
// the test on a driver that keeps no records (an optional slot).
class Recording {
 public:
  Recording() {
    const axon_status status = axon_activity_start();
    supported_ = status != AXON_ERROR_NOT_SUPPORTED;
    if (supported_) EXPECT_AXON_OK(status);
    collect_all();  // nothing left over from an earlier test
  }
  ~Recording() {
    if (supported_ && running_) EXPECT_AXON_OK(axon_activity_stop());
    axon_activity_set_correlation(0);
    axon_activity_set_label(nullptr);
  }
  bool supported() const { return supported_; }
  void stop() {
    running_ = false;
    EXPECT_AXON_OK(axon_activity_stop());
  }

 private:
  bool supported_ = false;
  bool running_ = true;
};

#define SKIP_WITHOUT_RECORDS(recording) \
  if (!(recording).supported()) GTEST_SKIP() << "this driver keeps no activity records"

}  // namespace

TEST(Activity, CopiesAndSetsAreRecordedWithKindBytesStreamAndTag) {
  Recording recording;
  SKIP_WITHOUT_RECORDS(recording);
  ScopedStream stream(0);
  DeviceBuffer device(0, 256);
  std::vector<unsigned char> host(256, 7);
  const std::int64_t before = realtime_ns();
  ASSERT_AXON_OK(axon_activity_set_correlation(41));
  ASSERT_AXON_OK(axon_memory_copy_async(device.get(), host.data(), 256, stream));
  ASSERT_AXON_OK(axon_activity_set_correlation(42));
  ASSERT_AXON_OK(axon_memory_set_async(device.get(), 0, 128, stream));
  ASSERT_AXON_OK(axon_activity_set_correlation(0));
  ASSERT_AXON_OK(axon_memory_copy_async(host.data(), device.get(), 64, stream));
  ASSERT_AXON_OK(axon_stream_synchronize(stream));
  const std::int64_t after = realtime_ns();

  const auto records = collect_all();
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].kind, AXON_ACTIVITY_COPY_HOST_TO_DEVICE);
  EXPECT_EQ(records[0].bytes, 256u);
  EXPECT_EQ(records[0].correlation, 41u);
  EXPECT_EQ(records[1].kind, AXON_ACTIVITY_SET);
  EXPECT_EQ(records[1].bytes, 128u);
  EXPECT_EQ(records[1].correlation, 42u);
  EXPECT_EQ(records[2].kind, AXON_ACTIVITY_COPY_DEVICE_TO_HOST);
  EXPECT_EQ(records[2].bytes, 64u);
  EXPECT_EQ(records[2].correlation, 0u);
  for (size_t index = 0; index < records.size(); ++index) {
    const axon_activity_record& record = records[index];
    EXPECT_EQ(record.device, 0);
    EXPECT_GT(record.stream_number, 0) << "a created stream is not the default stream (number 0)";
    EXPECT_EQ(record.stream_number, records[0].stream_number);
    EXPECT_EQ(record.status, AXON_SUCCESS);
    EXPECT_LE(before, record.start_ns);
    EXPECT_LE(record.start_ns, record.end_ns);
    EXPECT_LE(record.end_ns, after);
    if (index > 0) {
      EXPECT_LE(records[index - 1].end_ns, record.start_ns) << "stream order";
    }
  }
}

TEST(Activity, HostFunctionsCarryTheLabelAndTheirStatus) {
  Recording recording;
  SKIP_WITHOUT_RECORDS(recording);
  axon_stream stream = nullptr;
  ASSERT_AXON_OK(axon_stream_get_default(0, &stream));
  ASSERT_AXON_OK(axon_activity_set_label("my_kernel"));
  const axon_status launched = axon_test::launch(stream, [] {});
  if (launched == AXON_ERROR_NOT_SUPPORTED) GTEST_SKIP() << "this driver runs no host functions";
  ASSERT_AXON_OK(launched);
  ASSERT_AXON_OK(axon_activity_set_label(nullptr));
  ASSERT_AXON_OK(axon_test::launch_failing(stream, AXON_ERROR_TASK_OUT_OF_RANGE, "index 9 is out of range"));
  EXPECT_EQ(axon_stream_synchronize(stream), AXON_ERROR_TASK_OUT_OF_RANGE);

  const auto records = collect_all();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].kind, AXON_ACTIVITY_HOST_FUNCTION);
  EXPECT_STREQ(records[0].name, "my_kernel");
  EXPECT_EQ(records[0].stream_number, 0);
  EXPECT_EQ(records[0].status, AXON_SUCCESS);
  EXPECT_STREQ(records[1].name, "");
  EXPECT_EQ(records[1].status, AXON_ERROR_TASK_OUT_OF_RANGE);
}

TEST(Activity, OnlyWorkQueuedWhileRecordingIsRecordedEvenIfItRunsAfterStop) {
  ScopedStream stream(0);
  DeviceBuffer device(0, 64);
  std::vector<unsigned char> host(64, 1);
  Gate gate;
  const axon_status held = gate.hold(stream);
  if (held == AXON_ERROR_NOT_SUPPORTED) GTEST_SKIP() << "this driver runs no host functions";
  ASSERT_AXON_OK(held);  // queued before recording: never recorded
  Recording recording;
  SKIP_WITHOUT_RECORDS(recording);
  ASSERT_AXON_OK(axon_memory_copy_async(device.get(), host.data(), 64, stream));
  recording.stop();
  ASSERT_AXON_OK(axon_memory_copy_async(host.data(), device.get(), 32, stream));  // after stop: not recorded
  gate.open();
  ASSERT_AXON_OK(axon_stream_synchronize(stream));
  const auto records = collect_all();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].kind, AXON_ACTIVITY_COPY_HOST_TO_DEVICE);
  EXPECT_EQ(records[0].bytes, 64u);
}

TEST(Activity, StartAndStopMustAlternateAndCollectChecksItsArguments) {
  Recording recording;
  SKIP_WITHOUT_RECORDS(recording);
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_activity_start());
  EXPECT_TRUE(axon_test::contains(axon_last_error_message(), "already"));
  size_t count = 5;
  const size_t size = sizeof(axon_activity_record);
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_activity_collect(nullptr, size, 4, &count, nullptr));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_activity_collect(nullptr, size, 0, nullptr, nullptr));
  axon_activity_record record;
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_activity_collect(&record, size - 1, 1, &count, nullptr));
  EXPECT_AXON_OK(axon_activity_collect(nullptr, size, 0, &count, nullptr));
  EXPECT_EQ(count, 0u);
  recording.stop();
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_activity_stop());
}

TEST(Activity, ANewRecordingNeitherKeepsNorReceivesAnEarlierRecordingsRecords) {
  ScopedStream stream(0);
  DeviceBuffer device(0, 64);
  std::vector<unsigned char> host(64, 1);
  Gate gate;
  {
    Recording first;
    SKIP_WITHOUT_RECORDS(first);
    ASSERT_AXON_OK(axon_memory_copy_async(device.get(), host.data(), 16, stream));  // runs now: a left-over record
    ASSERT_AXON_OK(axon_stream_synchronize(stream));
    const axon_status held = gate.hold(stream);
    if (held == AXON_ERROR_NOT_SUPPORTED) GTEST_SKIP() << "this driver runs no host functions";
    ASSERT_AXON_OK(held);
    ASSERT_AXON_OK(axon_memory_copy_async(device.get(), host.data(), 32, stream));  // finishes in the next one
  }
  Recording second;
  ASSERT_AXON_OK(axon_memory_copy_async(device.get(), host.data(), 48, stream));
  gate.open();
  ASSERT_AXON_OK(axon_stream_synchronize(stream));
  const auto records = collect_all();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].bytes, 48u);
}

TEST(Activity, RecordsFitTheCallersRecordSize) {
  Recording recording;
  SKIP_WITHOUT_RECORDS(recording);
  ScopedStream stream(0);
  DeviceBuffer device(0, 64);
  ASSERT_AXON_OK(axon_memory_set_async(device.get(), 0, 64, stream));
  ASSERT_AXON_OK(axon_memory_set_async(device.get(), 1, 8, stream));
  ASSERT_AXON_OK(axon_stream_synchronize(stream));
  // A caller built with a newer, larger record: each record lands at its stride,
  // and what this driver does not know is zero.
  struct NewerRecord {
    axon_activity_record known;
    std::uint64_t appended_field;
  };
  NewerRecord newer[2];
  std::memset(newer, 0xab, sizeof(newer));
  size_t count = 0;
  ASSERT_AXON_OK(axon_activity_collect(newer, sizeof(NewerRecord), 2, &count, nullptr));
  ASSERT_EQ(count, 2u);
  EXPECT_EQ(newer[0].known.bytes, 64u);
  EXPECT_EQ(newer[1].known.bytes, 8u);
  EXPECT_EQ(newer[0].appended_field, 0u);
  EXPECT_EQ(newer[1].appended_field, 0u);
}
