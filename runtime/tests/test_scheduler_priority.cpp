// Scheduling across streams of one device: priority first, then submission order.

#include <mutex>
#include <string>
#include <vector>

#include "axon_test_support.h"

using axon_test::Gate;
using axon_test::ScopedStream;

namespace {

class OrderLog {
 public:
  axon_status append_on(axon_stream stream, std::string label) {
    return axon_test::launch(stream, [this, label] {
      std::lock_guard<std::mutex> guard(mutex_);
      labels_.push_back(label);
    });
  }
  std::vector<std::string> labels() {
    std::lock_guard<std::mutex> guard(mutex_);
    return labels_;
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> labels_;
};

}  // namespace

TEST(SchedulerPriority, MostUrgentReadyStreamRunsFirst) {
  int least = 0;
  int most = 0;
  ASSERT_AXON_OK(axon_stream_priority_range(&least, &most));
  if (least == most) GTEST_SKIP() << "the driver has a single priority";
  ScopedStream blocker(0);
  ScopedStream low(0, least);
  ScopedStream high(0, most);
  Gate gate;
  ASSERT_AXON_OK(gate.hold(blocker));  // occupies the device while we queue
  OrderLog log;
  ASSERT_AXON_OK(log.append_on(low, "low 1"));
  ASSERT_AXON_OK(log.append_on(low, "low 2"));
  ASSERT_AXON_OK(log.append_on(high, "high 1"));
  ASSERT_AXON_OK(log.append_on(high, "high 2"));
  gate.open();
  ASSERT_AXON_OK(axon_device_synchronize(0));
  EXPECT_EQ(log.labels(), (std::vector<std::string>{"high 1", "high 2", "low 1", "low 2"}));
}

TEST(SchedulerPriority, EqualPrioritiesRunInSubmissionOrder) {
  ScopedStream blocker(0);
  ScopedStream first(0);
  ScopedStream second(0);
  Gate gate;
  ASSERT_AXON_OK(gate.hold(blocker));
  OrderLog log;
  ASSERT_AXON_OK(log.append_on(second, "second 1"));
  ASSERT_AXON_OK(log.append_on(first, "first 1"));
  ASSERT_AXON_OK(log.append_on(second, "second 2"));
  ASSERT_AXON_OK(log.append_on(first, "first 2"));
  gate.open();
  ASSERT_AXON_OK(axon_device_synchronize(0));
  EXPECT_EQ(log.labels(), (std::vector<std::string>{"second 1", "first 1", "second 2", "first 2"}));
}

TEST(SchedulerPriority, UrgentStreamStillRespectsItsOwnOrderAndEventWaits) {
  int least = 0;
  int most = 0;
  ASSERT_AXON_OK(axon_stream_priority_range(&least, &most));
  ScopedStream blocker(0);
  ScopedStream low(0, least);
  ScopedStream high(0, most);
  axon_event event = nullptr;
  ASSERT_AXON_OK(axon_event_create(AXON_EVENT_DEFAULT, &event));
  Gate gate;
  ASSERT_AXON_OK(gate.hold(blocker));
  OrderLog log;
  ASSERT_AXON_OK(log.append_on(low, "low 1"));
  ASSERT_AXON_OK(axon_event_record(event, low));
  ASSERT_AXON_OK(log.append_on(low, "low 2"));
  ASSERT_AXON_OK(axon_stream_wait_event(high, event));  // high must wait for "low 1"
  ASSERT_AXON_OK(log.append_on(high, "high 1"));
  gate.open();
  ASSERT_AXON_OK(axon_device_synchronize(0));
  const std::vector<std::string> labels = log.labels();
  ASSERT_EQ(labels.size(), 3u);
  EXPECT_EQ(labels[0], "low 1");
  if (least != most) {
    EXPECT_EQ(labels[1], "high 1");  // ready again, and more urgent
  }
  ASSERT_AXON_OK(axon_event_destroy(event));
}
