// Many threads submitting to many streams at once: nothing lost, nothing doubled.

#include <atomic>
#include <thread>
#include <vector>

#include "axon_test_support.h"

TEST(Concurrency, ManyThreadsOnManyStreamsRunEveryTaskExactlyOnce) {
  constexpr int kThreads = 8;
  constexpr int kTasksPerThread = 400;
  const int devices = axon_test::device_count();
  std::atomic<int> executed{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const int device = t % devices;
      axon_stream own = nullptr;
      axon_stream shared = nullptr;
      if (axon_stream_create(device, -(t % 3), &own) != AXON_SUCCESS) ++failures;
      if (axon_stream_get_default(device, &shared) != AXON_SUCCESS) ++failures;
      int last_seen = -1;  // own stream is in order: each task sees its predecessor
      for (int i = 0; i < kTasksPerThread; ++i) {
        axon_stream target = (i % 4 == 0) ? shared : own;
        if (target == own) {
          if (axon_test::launch(own, [&, i] {
                if (last_seen >= i) ++failures;
                last_seen = i;
                ++executed;
              }) != AXON_SUCCESS) {
            ++failures;
          }
        } else if (axon_test::launch(shared, [&] { ++executed; }) != AXON_SUCCESS) {
          ++failures;
        }
      }
      if (axon_stream_synchronize(own) != AXON_SUCCESS) ++failures;
      if (axon_stream_destroy(own) != AXON_SUCCESS) ++failures;
    });
  }
  for (auto& thread : threads) thread.join();
  for (int device = 0; device < devices; ++device) ASSERT_AXON_OK(axon_device_synchronize(device));
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(executed.load(), kThreads * kTasksPerThread);
}

TEST(Concurrency, ConcurrentAllocationsNeverOverlap) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 200;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      axon_stream stream = nullptr;
      if (axon_stream_get_default(0, &stream) != AXON_SUCCESS) ++failures;
      for (int round = 0; round < kRounds; ++round) {
        void* pointer = nullptr;
        const size_t bytes = 256 * static_cast<size_t>(1 + (round + t) % 7);
        if (axon_memory_allocate(0, bytes, &pointer) != AXON_SUCCESS) {
          ++failures;
          continue;
        }
        const unsigned char mine = static_cast<unsigned char>(t + 1);
        std::vector<unsigned char> back(bytes);
        if (axon_memory_set_async(pointer, mine, bytes, stream) != AXON_SUCCESS) ++failures;
        if (axon_memory_copy(back.data(), pointer, bytes, stream) != AXON_SUCCESS) ++failures;
        for (unsigned char value : back) {
          if (value != mine) {
            ++failures;
            break;
          }
        }
        if (axon_memory_free(pointer) != AXON_SUCCESS) ++failures;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(Concurrency, HostThreadsWaitingOnEventsAllWake) {
  axon_test::ScopedStream stream(0);
  axon_event event = nullptr;
  ASSERT_AXON_OK(axon_event_create(0, &event));
  axon_test::Gate gate;
  ASSERT_AXON_OK(gate.hold(stream));
  ASSERT_AXON_OK(axon_event_record(event, stream));
  std::atomic<int> woke{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < 6; ++i) {
    waiters.emplace_back([&] {
      if (axon_event_synchronize(event) == AXON_SUCCESS) ++woke;
    });
  }
  gate.open();
  for (auto& waiter : waiters) waiter.join();
  EXPECT_EQ(woke.load(), 6);
  ASSERT_AXON_OK(axon_event_destroy(event));
}
