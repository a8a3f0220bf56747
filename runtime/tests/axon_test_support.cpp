#include "axon_test_support.h"

#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>

namespace axon_test {
namespace {

struct TaskState {
  TaskBody body;
  ReleaseCounter* counter;
};

axon_status run_task_state(void* user_data, char* message) { return static_cast<TaskState*>(user_data)->body(message); }

void release_task_state(void* user_data) {
  auto* state = static_cast<TaskState*>(user_data);
  if (state->counter != nullptr) state->counter->count.fetch_add(1);
  delete state;
}

}  // namespace

axon_host_function make_task(TaskBody body, ReleaseCounter* counter) {
  return axon_host_function{run_task_state, release_task_state, new TaskState{std::move(body), counter}};
}

axon_status launch(axon_stream stream, std::function<void()> body) {
  return axon_stream_launch_host_function(stream, make_task([body = std::move(body)](char*) {
                                            body();
                                            return AXON_SUCCESS;
                                          }));
}

axon_status launch_failing(axon_stream stream, axon_status status, const std::string& text) {
  return axon_stream_launch_host_function(stream, make_task([status, text](char* message) {
                                            std::snprintf(message, AXON_TASK_MESSAGE_CAPACITY, "%s", text.c_str());
                                            return status;
                                          }));
}

axon_status Gate::hold(axon_stream stream) {
  std::shared_future<void> future = future_;
  return launch(stream, [future] { future.wait(); });
}

void require(axon_status status, const char* call) {
  if (status == AXON_SUCCESS) return;
  throw std::runtime_error(std::string(call) + " returned " + axon_status_name(status) + ": " +
                           axon_last_error_message());
}

void* host_view(const void* device_pointer) {
  void* view = nullptr;
  require(axon_memory_host_view(device_pointer, &view), "axon_memory_host_view");
  return view;
}

int device_count() {
  int count = 0;
  require(axon_device_count(&count), "axon_device_count");
  return count;
}

size_t memory_used(int device) {
  size_t bytes = 0;
  require(axon_memory_used(device, &bytes), "axon_memory_used");
  return bytes;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

ScopedStream::ScopedStream(int device, int priority) {
  require(axon_stream_create(device, priority, &stream_), "axon_stream_create");
}

ScopedStream::~ScopedStream() {
  if (stream_ != nullptr) EXPECT_EQ(axon_stream_destroy(stream_), AXON_SUCCESS) << axon_last_error_message();
}

DeviceBuffer::DeviceBuffer(int device, size_t bytes) {
  require(axon_memory_allocate(device, bytes, &pointer_), "axon_memory_allocate");
}

DeviceBuffer::~DeviceBuffer() {
  if (pointer_ != nullptr) EXPECT_EQ(axon_memory_free(pointer_), AXON_SUCCESS) << axon_last_error_message();
}

}  // namespace axon_test
