// Events: recording, queries, waits across streams and devices, timing.

#include <chrono>
#include <thread>

#include "axon_test_support.h"

using axon_test::Gate;
using axon_test::ScopedStream;

namespace {

class ScopedEvent {
 public:
  explicit ScopedEvent(unsigned flags = AXON_EVENT_DEFAULT) {
    EXPECT_EQ(axon_event_create(flags, &event_), AXON_SUCCESS) << axon_last_error_message();
  }
  ~ScopedEvent() { EXPECT_EQ(axon_event_destroy(event_), AXON_SUCCESS) << axon_last_error_message(); }
  operator axon_event() const { return event_; }

 private:
  axon_event event_ = nullptr;
};

void give_a_wrong_implementation_time() { std::this_thread::sleep_for(std::chrono::milliseconds(5)); }

}  // namespace

TEST(Event, NeverRecordedCountsAsComplete) {
  ScopedEvent event;
  EXPECT_AXON_OK(axon_event_query(event));
  EXPECT_AXON_OK(axon_event_synchronize(event));
  int device = 5;
  ASSERT_AXON_OK(axon_event_get_device(event, &device));
  EXPECT_EQ(device, -1);
  ScopedStream stream(0);
  ASSERT_AXON_OK(axon_stream_wait_event(stream, event));
  ASSERT_AXON_OK(axon_stream_synchronize(stream));
}

TEST(Event, InvalidHandlesAndFlagsAreRejected) {
  axon_event event = nullptr;
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_event_create(4, &event));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_HANDLE, axon_event_query(nullptr));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_HANDLE, axon_event_synchronize(nullptr));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_HANDLE, axon_event_destroy(nullptr));
  ASSERT_AXON_OK(axon_event_create(AXON_EVENT_DEFAULT, &event));
  axon_stream stream = nullptr;
  ASSERT_AXON_OK(axon_stream_get_default(0, &stream));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_HANDLE, axon_event_record(event, nullptr));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_HANDLE, axon_stream_wait_event(nullptr, event));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_event_get_device(event, nullptr));
  ASSERT_AXON_OK(axon_event_destroy(event));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_HANDLE, axon_event_record(event, stream));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_HANDLE, axon_event_query(event));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_HANDLE, axon_stream_wait_event(stream, event));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_HANDLE, axon_event_destroy(event));
  EXPECT_NE(std::string(axon_last_error_message()).find("not a live event"), std::string::npos);
}

TEST(Event, CompletesWhenTheStreamReachesIt) {
  const int device = axon_test::device_count() - 1;
  ScopedStream stream(device);
  ScopedEvent event;
  Gate gate;
  ASSERT_AXON_OK(gate.hold(stream));
  ASSERT_AXON_OK(axon_event_record(event, stream));
  int recorded_device = -1;
  ASSERT_AXON_OK(axon_event_get_device(event, &recorded_device));
  EXPECT_EQ(recorded_device, device);
  give_a_wrong_implementation_time();
  EXPECT_EQ(axon_event_query(event), AXON_ERROR_NOT_READY);
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    gate.open();
  });
  ASSERT_AXON_OK(axon_event_synchronize(event));
  EXPECT_AXON_OK(axon_event_query(event));
  opener.join();
}

TEST(Event, StreamWaitsForAnEventRecordedOnAnotherStream) {
  ScopedStream producer(0);
  ScopedStream consumer(0);
  ScopedEvent event;
  Gate gate;
  ASSERT_AXON_OK(gate.hold(producer));
  ASSERT_AXON_OK(axon_event_record(event, producer));
  ASSERT_AXON_OK(axon_stream_wait_event(consumer, event));
  std::atomic<bool> consumed{false};
  ASSERT_AXON_OK(axon_test::launch(consumer, [&] { consumed = true; }));
  give_a_wrong_implementation_time();
  EXPECT_EQ(axon_stream_query(consumer), AXON_ERROR_NOT_READY);
  EXPECT_FALSE(consumed.load());
  gate.open();
  ASSERT_AXON_OK(axon_stream_synchronize(consumer));
  EXPECT_TRUE(consumed.load());
}

TEST(Event, StreamWaitsForAnEventRecordedOnAnotherDevice) {
  if (axon_test::device_count() < 2) GTEST_SKIP() << "needs two devices";
  ScopedStream producer(1);
  ScopedStream consumer(0);
  ScopedStream bystander(0);
  ScopedEvent event;
  Gate gate;
  ASSERT_AXON_OK(gate.hold(producer));
  ASSERT_AXON_OK(axon_event_record(event, producer));
  ASSERT_AXON_OK(axon_stream_wait_event(consumer, event));
  std::atomic<bool> consumed{false};
  ASSERT_AXON_OK(axon_test::launch(consumer, [&] { consumed = true; }));
  // A waiting head must not block the device: other streams keep running.
  std::atomic<bool> bystander_ran{false};
  ASSERT_AXON_OK(axon_test::launch(bystander, [&] { bystander_ran = true; }));
  ASSERT_AXON_OK(axon_stream_synchronize(bystander));
  EXPECT_TRUE(bystander_ran.load());
  EXPECT_EQ(axon_stream_query(consumer), AXON_ERROR_NOT_READY);
  EXPECT_FALSE(consumed.load());
  gate.open();
  ASSERT_AXON_OK(axon_stream_synchronize(consumer));
  EXPECT_TRUE(consumed.load());
}

TEST(Event, EarlierWaitsKeepTheirRecordingWhenTheEventIsRecordedAgain) {
  if (axon_test::device_count() < 2) GTEST_SKIP() << "needs two devices";
  ScopedStream slow(1);
  ScopedStream fast(0);
  ScopedStream consumer(0);
  ScopedEvent event;
  Gate gate;
  ASSERT_AXON_OK(gate.hold(slow));
  ASSERT_AXON_OK(axon_event_record(event, slow));           // recording 1, held by the gate
  ASSERT_AXON_OK(axon_stream_wait_event(consumer, event));  // waits for recording 1
  std::atomic<bool> consumed{false};
  ASSERT_AXON_OK(axon_test::launch(consumer, [&] { consumed = true; }));
  ASSERT_AXON_OK(axon_event_record(event, fast));  // recording 2 completes at once
  ASSERT_AXON_OK(axon_event_synchronize(event));   // refers to the newest recording
  EXPECT_AXON_OK(axon_event_query(event));
  give_a_wrong_implementation_time();
  EXPECT_EQ(axon_stream_query(consumer), AXON_ERROR_NOT_READY);
  EXPECT_FALSE(consumed.load());
  gate.open();
  ASSERT_AXON_OK(axon_stream_synchronize(consumer));
  EXPECT_TRUE(consumed.load());
}

TEST(Event, ReRecordingMovesQueriesToTheNewestRecording) {
  ScopedStream first(0);
  ScopedStream second(0);
  ScopedEvent event;
  ASSERT_AXON_OK(axon_event_record(event, first));
  ASSERT_AXON_OK(axon_stream_synchronize(first));
  EXPECT_AXON_OK(axon_event_query(event));
  Gate gate;
  ASSERT_AXON_OK(gate.hold(second));
  ASSERT_AXON_OK(axon_event_record(event, second));
  EXPECT_EQ(axon_event_query(event), AXON_ERROR_NOT_READY);
  // A wait made now refers to the pending recording on `second`.
  ASSERT_AXON_OK(axon_stream_wait_event(first, event));
  std::atomic<bool> ran{false};
  ASSERT_AXON_OK(axon_test::launch(first, [&] { ran = true; }));
  give_a_wrong_implementation_time();
  EXPECT_FALSE(ran.load());
  gate.open();
  ASSERT_AXON_OK(axon_stream_synchronize(first));
  EXPECT_TRUE(ran.load());
  EXPECT_AXON_OK(axon_event_query(event));
}

TEST(Event, DestroyingAnEventWithPendingRecordingsIsSafe) {
  ScopedStream producer(0);
  ScopedStream consumer(0);
  axon_event event = nullptr;
  ASSERT_AXON_OK(axon_event_create(AXON_EVENT_TIMING, &event));
  Gate gate;
  ASSERT_AXON_OK(gate.hold(producer));
  ASSERT_AXON_OK(axon_event_record(event, producer));
  ASSERT_AXON_OK(axon_stream_wait_event(consumer, event));
  std::atomic<bool> consumed{false};
  ASSERT_AXON_OK(axon_test::launch(consumer, [&] { consumed = true; }));
  ASSERT_AXON_OK(axon_event_destroy(event));
  give_a_wrong_implementation_time();
  EXPECT_FALSE(consumed.load());  // the destroyed event's recording is still awaited
  gate.open();
  ASSERT_AXON_OK(axon_stream_synchronize(consumer));
  ASSERT_AXON_OK(axon_stream_synchronize(producer));
  EXPECT_TRUE(consumed.load());
}

TEST(Event, ElapsedTimeMeasuresBetweenCompletions) {
  ScopedStream stream(0);
  ScopedEvent start(AXON_EVENT_TIMING);
  ScopedEvent end(AXON_EVENT_TIMING);
  ASSERT_AXON_OK(axon_event_record(start, stream));
  ASSERT_AXON_OK(axon_test::launch(stream, [] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }));
  ASSERT_AXON_OK(axon_event_record(end, stream));
  ASSERT_AXON_OK(axon_event_synchronize(end));
  float milliseconds = -1;
  ASSERT_AXON_OK(axon_event_elapsed_time(start, end, &milliseconds));
  EXPECT_GE(milliseconds, 19.0f);
  EXPECT_LT(milliseconds, 5000.0f);
  ASSERT_AXON_OK(axon_event_elapsed_time(start, start, &milliseconds));
  EXPECT_EQ(milliseconds, 0.0f);
}

TEST(Event, ElapsedTimeRefusesEventsWithoutTimingOrRecordingAndWaitsForCompletion) {
  ScopedStream stream(0);
  ScopedEvent timed(AXON_EVENT_TIMING);
  ScopedEvent untimed(AXON_EVENT_DEFAULT);
  ScopedEvent never_recorded(AXON_EVENT_TIMING);
  float milliseconds = -1;
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_event_elapsed_time(timed, timed, nullptr));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_HANDLE, axon_event_elapsed_time(nullptr, timed, &milliseconds));
  ASSERT_AXON_OK(axon_event_record(timed, stream));
  ASSERT_AXON_OK(axon_event_record(untimed, stream));
  ASSERT_AXON_OK(axon_stream_synchronize(stream));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_EVENT_STATE, axon_event_elapsed_time(timed, untimed, &milliseconds));
  EXPECT_NE(std::string(axon_last_error_message()).find("AXON_EVENT_TIMING"), std::string::npos);
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_EVENT_STATE, axon_event_elapsed_time(never_recorded, timed, &milliseconds));
  EXPECT_NE(std::string(axon_last_error_message()).find("never recorded"), std::string::npos);

  Gate gate;
  ASSERT_AXON_OK(gate.hold(stream));
  ScopedEvent pending(AXON_EVENT_TIMING);
  ASSERT_AXON_OK(axon_event_record(pending, stream));
  EXPECT_AXON_STATUS(AXON_ERROR_NOT_READY, axon_event_elapsed_time(timed, pending, &milliseconds));
  EXPECT_EQ(milliseconds, -1.0f);
  gate.open();
  ASSERT_AXON_OK(axon_event_synchronize(pending));
  ASSERT_AXON_OK(axon_event_elapsed_time(timed, pending, &milliseconds));
  EXPECT_GE(milliseconds, 0.0f);
}
