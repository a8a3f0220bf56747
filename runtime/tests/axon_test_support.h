// Helpers shared by the runtime test suites: status assertions, tasks made
// from lambdas, and gates that hold a device worker inside a task.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <future>
#include <string>

#include "axon/runtime.h"

#define AXON_STATUS_TEXT(status) (std::string(axon_status_name(status)) + " (" + axon_last_error_message() + ")")

#define ASSERT_AXON_OK(expression)                                              \
  do {                                                                          \
    const axon_status axon_status_value_ = (expression);                        \
    ASSERT_EQ(axon_status_value_, AXON_SUCCESS)                                 \
        << #expression << " returned " << AXON_STATUS_TEXT(axon_status_value_); \
  } while (0)

#define EXPECT_AXON_OK(expression)                                              \
  do {                                                                          \
    const axon_status axon_status_value_ = (expression);                        \
    EXPECT_EQ(axon_status_value_, AXON_SUCCESS)                                 \
        << #expression << " returned " << AXON_STATUS_TEXT(axon_status_value_); \
  } while (0)

#define EXPECT_AXON_STATUS(expected, expression)                                                                    \
  do {                                                                                                              \
    const axon_status axon_status_value_ = (expression);                                                            \
    EXPECT_EQ(axon_status_value_, expected) << #expression << " returned " << AXON_STATUS_TEXT(axon_status_value_); \
  } while (0)

namespace axon_test {

// A task body; return AXON_SUCCESS or write `message` and return a failure.
using TaskBody = std::function<axon_status(char* message)>;

// Counts calls of `release` for tasks made by make_task.
struct ReleaseCounter {
  std::atomic<int> count{0};
};

// Wraps `body` as an axon_host_function whose release deletes it (and bumps `counter`).
axon_host_function make_task(TaskBody body, ReleaseCounter* counter = nullptr);

// Launches a task running `body`; returns the launch status.
axon_status launch(axon_stream stream, std::function<void()> body);
axon_status launch_failing(axon_stream stream, axon_status status, const std::string& message);

// Holds every task launched through hold() until open() is called. Opens on
// destruction, so a failed assertion cannot leave a worker blocked forever.
class Gate {
 public:
  Gate() : future_(promise_.get_future().share()) {}
  ~Gate() { open(); }
  void open() {
    if (!opened_.exchange(true)) promise_.set_value();
  }
  // Launches on `stream` a task that blocks its device until open().
  axon_status hold(axon_stream stream);

 private:
  std::promise<void> promise_;
  std::shared_future<void> future_;
  std::atomic<bool> opened_{false};
};

// Throws std::runtime_error naming `call`, its status and the detail unless
// `status` is AXON_SUCCESS. For the helpers a test cannot go on without: the
// test fails with that message instead of using an unset handle or pointer
// (a driver that refuses a call, such as the null driver, must not crash the
// conformance suite).
void require(axon_status status, const char* call);

// Device memory as host code inside a task sees it.
void* host_view(const void* device_pointer);

int device_count();

// axon_memory_used(device), failing the test if the call fails.
size_t memory_used(int device);

// Whether `text` (e.g. axon_last_error_message()) contains `part`.
bool contains(const std::string& text, const std::string& part);

// RAII stream on `device` with `priority`.
class ScopedStream {
 public:
  explicit ScopedStream(int device = 0, int priority = 0);
  ~ScopedStream();
  ScopedStream(const ScopedStream&) = delete;
  ScopedStream& operator=(const ScopedStream&) = delete;
  axon_stream get() const { return stream_; }
  operator axon_stream() const { return stream_; }

 private:
  axon_stream stream_ = nullptr;
};

// RAII device allocation.
class DeviceBuffer {
 public:
  DeviceBuffer(int device, size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return pointer_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(pointer_);
  }

 private:
  void* pointer_ = nullptr;
};

}  // namespace axon_test
