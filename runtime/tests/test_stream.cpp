// Streams: lifetime, properties, asynchrony and in-order execution.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "axon_test_support.h"

using axon_test::Gate;
using axon_test::ScopedStream;

namespace {

// Times the calling thread has gone to sleep so far (Linux's count of its voluntary context switches).
long voluntary_context_switches_of_this_thread() {
  std::ifstream status("/proc/thread-self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("voluntary_ctxt_switches:", 0) == 0) return std::stol(line.substr(24));
  }
  return -1;
}

void busy_wait(std::chrono::microseconds duration) {
  const auto end = std::chrono::steady_clock::now() + duration;
  while (std::chrono::steady_clock::now() < end) {
  }
}

}  // namespace

TEST(Stream, CreateReportsDeviceAndClampedPriority) {
  int least = 0;
  int most = 0;
  ASSERT_AXON_OK(axon_stream_priority_range(&least, &most));
  EXPECT_LE(most, least);
  for (int device = 0; device < axon_test::device_count(); ++device) {
    for (const auto& [requested, expected] :
         std::vector<std::pair<int, int>>{{0, 0}, {most, most}, {least + 5, least}, {most - 5, most}}) {
      axon_stream stream = nullptr;
      ASSERT_AXON_OK(axon_stream_create(device, requested, &stream));
      int priority = 99;
      int owner = -1;
      ASSERT_AXON_OK(axon_stream_get_priority(stream, &priority));
      ASSERT_AXON_OK(axon_stream_get_device(stream, &owner));
      EXPECT_EQ(priority, expected);
      EXPECT_EQ(owner, device);
      ASSERT_AXON_OK(axon_stream_destroy(stream));
    }
  }
}

TEST(Stream, DefaultStreamsAreStablePerDeviceAndCannotBeDestroyed) {
  std::vector<axon_stream> defaults;
  for (int device = 0; device < axon_test::device_count(); ++device) {
    axon_stream first = nullptr;
    axon_stream second = nullptr;
    ASSERT_AXON_OK(axon_stream_get_default(device, &first));
    ASSERT_AXON_OK(axon_stream_get_default(device, &second));
    EXPECT_EQ(first, second);
    for (axon_stream other : defaults) EXPECT_NE(other, first);
    defaults.push_back(first);
    int owner = -1;
    int priority = 99;
    ASSERT_AXON_OK(axon_stream_get_device(first, &owner));
    ASSERT_AXON_OK(axon_stream_get_priority(first, &priority));
    EXPECT_EQ(owner, device);
    EXPECT_EQ(priority, 0);
    EXPECT_AXON_STATUS(AXON_ERROR_INVALID_HANDLE, axon_stream_destroy(first));
    EXPECT_NE(std::string(axon_last_error_message()).find("default"), std::string::npos);
    ASSERT_AXON_OK(axon_stream_synchronize(first));  // still alive
  }
}

TEST(Stream, InvalidHandlesAndArgumentsAreRejected) {
  axon_stream stream = nullptr;
  int value = 0;
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_DEVICE, axon_stream_create(-1, 0, &stream));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_DEVICE, axon_stream_create(axon_test::device_count(), 0, &stream));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_stream_create(0, 0, nullptr));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_DEVICE, axon_stream_get_default(-1, &stream));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_stream_get_default(0, nullptr));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_HANDLE, axon_stream_get_device(nullptr, &value));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_HANDLE, axon_stream_get_priority(nullptr, &value));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_HANDLE, axon_stream_query(nullptr));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_HANDLE, axon_stream_synchronize(nullptr));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_HANDLE, axon_stream_destroy(nullptr));

  ASSERT_AXON_OK(axon_stream_create(0, 0, &stream));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_stream_get_device(stream, nullptr));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_stream_get_priority(stream, nullptr));
  ASSERT_AXON_OK(axon_stream_destroy(stream));
  // The handle is now dangling: every call must notice rather than crash.
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_HANDLE, axon_stream_destroy(stream));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_HANDLE, axon_stream_query(stream));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_HANDLE, axon_stream_synchronize(stream));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_HANDLE, axon_stream_get_device(stream, &value));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_HANDLE, axon_test::launch(stream, [] {}));
  EXPECT_NE(std::string(axon_last_error_message()).find("not a live stream"), std::string::npos);
}

TEST(Stream, LaunchReturnsAtOnceAndQueuedWorkWaitsBehindABlockedTask) {
  ScopedStream stream(0);
  Gate gate;
  ASSERT_AXON_OK(gate.hold(stream));
  std::atomic<bool> ran{false};
  ASSERT_AXON_OK(axon_test::launch(stream, [&] { ran = true; }));
  axon_test::DeviceBuffer device(0, sizeof(int));
  const int value = 5;
  ASSERT_AXON_OK(axon_memory_copy_async(device.get(), &value, sizeof value, stream));
  int result = 0;
  ASSERT_AXON_OK(axon_memory_copy_async(&result, device.get(), sizeof result, stream));

  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(axon_stream_query(stream), AXON_ERROR_NOT_READY);
  EXPECT_FALSE(ran.load());
  EXPECT_EQ(result, 0);

  gate.open();
  ASSERT_AXON_OK(axon_stream_synchronize(stream));
  EXPECT_TRUE(ran.load());
  EXPECT_EQ(result, 5);
  EXPECT_AXON_OK(axon_stream_query(stream));
}

TEST(Stream, WorkRunsInSubmissionOrder) {
  ScopedStream stream(0);
  std::vector<int> order;  // touched only by the device worker until synchronize
  axon_test::DeviceBuffer device(0, sizeof(int));
  for (int i = 0; i < 200; ++i) {
    ASSERT_AXON_OK(axon_test::launch(stream, [&order, i] { order.push_back(i); }));
    if (i % 50 == 0) ASSERT_AXON_OK(axon_memory_set_async(device.get(), i, sizeof(int), stream));
  }
  ASSERT_AXON_OK(axon_stream_synchronize(stream));
  ASSERT_EQ(order.size(), 200u);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(order[static_cast<size_t>(i)], i);
}

TEST(Stream, SubmissionCountCountsEveryQueuedItemFinishedOrNot) {
  ScopedStream stream(0);
  ScopedStream other(0);
  uint64_t count = 99;
  ASSERT_AXON_OK(axon_stream_get_submission_count(stream, &count));
  EXPECT_EQ(count, 0u);
  Gate gate;
  ASSERT_AXON_OK(gate.hold(stream));
  ASSERT_AXON_OK(axon_test::launch(stream, [] {}));
  axon_test::DeviceBuffer device(0, sizeof(int));
  ASSERT_AXON_OK(axon_memory_set_async(device.get(), 0, sizeof(int), stream));
  axon_event event = nullptr;
  ASSERT_AXON_OK(axon_event_create(0, &event));
  ASSERT_AXON_OK(axon_event_record(event, stream));
  ASSERT_AXON_OK(axon_stream_wait_event(stream, event));
  ASSERT_AXON_OK(axon_stream_get_submission_count(stream, &count));
  EXPECT_EQ(count, 5u);  // the gate, the launch, the set, the record and the wait, none finished yet
  gate.open();
  ASSERT_AXON_OK(axon_stream_synchronize(stream));
  ASSERT_AXON_OK(axon_stream_get_submission_count(stream, &count));
  EXPECT_EQ(count, 5u);
  ASSERT_AXON_OK(axon_stream_get_submission_count(other, &count));
  EXPECT_EQ(count, 0u);  // per stream
  EXPECT_EQ(axon_stream_get_submission_count(stream, nullptr), AXON_ERROR_INVALID_VALUE);
  EXPECT_EQ(axon_stream_get_submission_count(nullptr, &count), AXON_ERROR_INVALID_HANDLE);
  ASSERT_AXON_OK(axon_event_destroy(event));
}

TEST(Stream, DestroyWaitsForPendingWork) {
  axon_stream stream = nullptr;
  ASSERT_AXON_OK(axon_stream_create(0, 0, &stream));
  Gate gate;
  ASSERT_AXON_OK(gate.hold(stream));
  std::atomic<bool> ran{false};
  ASSERT_AXON_OK(axon_test::launch(stream, [&] { ran = true; }));
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    gate.open();
  });
  ASSERT_AXON_OK(axon_stream_destroy(stream));
  EXPECT_TRUE(ran.load());
  opener.join();
}

TEST(Stream, SynchronizeWaitsOnlyForWorkQueuedBeforeIt) {
  ScopedStream stream(0);
  std::atomic<int> finished{0};
  for (int i = 0; i < 20; ++i) ASSERT_AXON_OK(axon_test::launch(stream, [&] { ++finished; }));
  ASSERT_AXON_OK(axon_stream_synchronize(stream));
  EXPECT_EQ(finished.load(), 20);
  EXPECT_AXON_OK(axon_stream_query(stream));
}

// A host waiting for a long queue is woken when its work is done, not once
// per finished item: each needless wake is a system call on the worker and a
// context switch for the host, on cores the device's work needs.
TEST(Stream, SynchronizingHostsAreNotWokenByEachFinishedItem) {
  ScopedStream stream(0);
  constexpr int kItems = 300;
  std::atomic<int> finished{0};
  const auto queue_items = [&] {
    for (int i = 0; i < kItems; ++i) {
      ASSERT_AXON_OK(axon_test::launch(stream, [&] {
        busy_wait(std::chrono::microseconds(50));
        ++finished;
      }));
    }
  };
  queue_items();
  long before = voluntary_context_switches_of_this_thread();
  ASSERT_GE(before, 0) << "/proc/thread-self/status has no voluntary_ctxt_switches";
  ASSERT_AXON_OK(axon_stream_synchronize(stream));
  EXPECT_EQ(finished.load(), kItems);
  EXPECT_LT(voluntary_context_switches_of_this_thread() - before, kItems / 10) << "axon_stream_synchronize";

  queue_items();
  before = voluntary_context_switches_of_this_thread();
  ASSERT_AXON_OK(axon_device_synchronize(0));
  EXPECT_EQ(finished.load(), 2 * kItems);
  EXPECT_LT(voluntary_context_switches_of_this_thread() - before, kItems / 10) << "axon_device_synchronize";
}

// A waiting host spins a short while before it sleeps. Work that finishes
// just as the spin ends (the task lengths below sweep across it) must still
// wake the host: a completion between the spin's end and the sleep, missed,
// leaves the wait hanging, so the waits run on a thread the test gives a
// deadline.
TEST(Stream, WaitsEndingAroundTheHostSpinAreNeverMissed) {
  auto waits = std::async(std::launch::async, [] {
    ScopedStream stream(0);
    unsigned char back = 0;
    const unsigned char* device = nullptr;
    void* pointer = nullptr;
    if (axon_memory_allocate(0, 1, &pointer) != AXON_SUCCESS) return std::string("allocate failed");
    device = static_cast<const unsigned char*>(pointer);
    for (int round = 0; round < 3000; ++round) {
      const auto length = std::chrono::nanoseconds(20 * (round % 3000));  // 0 to 60 us
      if (axon_test::launch(stream.get(), [length] {
            busy_wait(std::chrono::duration_cast<std::chrono::microseconds>(length));
          }) != AXON_SUCCESS) {
        return std::string("launch failed");
      }
      const axon_status status =
          round % 2 == 0 ? axon_stream_synchronize(stream.get()) : axon_memory_copy(&back, device, 1, stream.get());
      if (status != AXON_SUCCESS) return "wait failed in round " + std::to_string(round);
    }
    axon_memory_free(pointer);
    return std::string();
  });
  if (waits.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    // The hung thread cannot be joined, and the future's destructor would.
    std::fprintf(stderr, "a wait did not return within 60 s: a completion was missed\n");
    std::fflush(stderr);
    std::_Exit(1);
  }
  EXPECT_EQ(waits.get(), "");
}

namespace {

// A host function run in place: counts its runs and notes the thread.
struct InPlaceTask {
  int runs = 0;
  std::thread::id thread;
  axon_status status = AXON_SUCCESS;

  static axon_status run(void* user_data, char* message) {
    auto* task = static_cast<InPlaceTask*>(user_data);
    ++task->runs;
    task->thread = std::this_thread::get_id();
    if (task->status != AXON_SUCCESS) std::snprintf(message, AXON_TASK_MESSAGE_CAPACITY, "in-place task failed");
    return task->status;
  }
  static void release(void* user_data) { static_cast<InPlaceTask*>(user_data)->runs += 1000; }

  axon_host_function function() { return {&InPlaceTask::run, &InPlaceTask::release, this}; }
};

}  // namespace

TEST(Stream, RunIfIdleRunsOnTheCallingThreadWhenTheDeviceHasNothingToDo) {
  ScopedStream stream(0);
  ASSERT_AXON_OK(axon_test::launch(stream, [] {}));
  ASSERT_AXON_OK(axon_device_synchronize(0));
  InPlaceTask task;
  ASSERT_AXON_OK(axon_stream_run_host_function_if_idle(stream, task.function()));
  EXPECT_EQ(task.runs, 1);  // run once, and not released: the caller keeps it
  EXPECT_EQ(task.thread, std::this_thread::get_id());
  uint64_t count = 0;
  ASSERT_AXON_OK(axon_stream_get_submission_count(stream, &count));
  EXPECT_EQ(count, 1u);  // nothing was queued
}

TEST(Stream, RunIfIdleRefusesWhileAnyStreamOfTheDeviceHasUnfinishedWork) {
  ScopedStream stream(0);
  ScopedStream other(0);
  Gate gate;
  ASSERT_AXON_OK(gate.hold(other));
  InPlaceTask task;
  // Another stream holds the device: work queued on `stream` would wait, so
  // work run in its place must wait too.
  EXPECT_EQ(axon_stream_run_host_function_if_idle(stream, task.function()), AXON_ERROR_NOT_READY);
  EXPECT_EQ(axon_stream_run_host_function_if_idle(other, task.function()), AXON_ERROR_NOT_READY);
  EXPECT_EQ(task.runs, 0);
  gate.open();
  ASSERT_AXON_OK(axon_device_synchronize(0));
  ASSERT_AXON_OK(axon_stream_run_host_function_if_idle(stream, task.function()));
  EXPECT_EQ(task.runs, 1);
  if (axon_test::device_count() > 1) {
    // Other devices' work does not hold this one.
    Gate elsewhere;
    ScopedStream remote(1);
    ASSERT_AXON_OK(elsewhere.hold(remote));
    const axon_status status = axon_stream_run_host_function_if_idle(stream, task.function());
    elsewhere.open();  // before `remote` is destroyed, which waits for it
    ASSERT_AXON_OK(status);
    EXPECT_EQ(task.runs, 2);
  }
}

TEST(Stream, RunIfIdleRefusesWhileActivityIsRecorded) {
  ScopedStream stream(0);
  InPlaceTask task;
  ASSERT_AXON_OK(axon_activity_start());
  EXPECT_EQ(axon_stream_run_host_function_if_idle(stream, task.function()), AXON_ERROR_NOT_READY);
  ASSERT_AXON_OK(axon_activity_stop());
  EXPECT_EQ(task.runs, 0);
}

TEST(Stream, RunIfIdleReturnsTheTasksFailureToItsCaller) {
  ScopedStream stream(0);
  InPlaceTask task;
  task.status = AXON_ERROR_TASK_OUT_OF_RANGE;
  EXPECT_EQ(axon_stream_run_host_function_if_idle(stream, task.function()), AXON_ERROR_TASK_OUT_OF_RANGE);
  EXPECT_NE(std::string(axon_last_error_message()).find("in-place task failed"), std::string::npos);
  ASSERT_AXON_OK(axon_stream_synchronize(stream));  // the stream keeps no pending error
  EXPECT_EQ(axon_stream_run_host_function_if_idle(stream, {nullptr, nullptr, nullptr}), AXON_ERROR_INVALID_VALUE);
  EXPECT_EQ(axon_stream_run_host_function_if_idle(nullptr, task.function()), AXON_ERROR_INVALID_HANDLE);
  EXPECT_EQ(task.runs, 1);
}
