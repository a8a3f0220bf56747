#include "axon_test_support.h"

#include <cstdio>
#include <utility>

namespace axon_test {
namespace {

struct TaskState {
  TaskBody body;
  ReleaseCounter* counter;
};

axon_status run_task_state(void* user_data, char* message) {
  return static_cast<TaskState*>(user_data)->body(message);
}

void release_task_state(void* user_data) {
  auto* state = static_cast<TaskState*>(user_data);
  if (state->counter != nullptr) state->counter->count.fetch_add(1);
  delete state;
}

}  // namespace

axon_task make_task(TaskBody body, ReleaseCounter* counter) {
  return axon_task{run_task_state, release_task_state, new TaskState{std::move(body), counter}};
}

axon_status launch(axon_stream stream, std::function<void()> body) {
  return axon_stream_launch(stream, make_task([body = std::move(body)](char*) {
                              body();
                              return AXON_SUCCESS;
                            }));
}

axon_status launch_failing(axon_stream stream, axon_status status, const std::string& text) {
  return axon_stream_launch(stream, make_task([status, text](char* message) {
                              std::snprintf(message, AXON_TASK_MESSAGE_CAPACITY, "%s", text.c_str());
                              return status;
                            }));
}

axon_status Gate::hold(axon_stream stream) {
  std::shared_future<void> future = future_;
  return launch(stream, [future] { future.wait(); });
}

void* host_view(const void* device_pointer) {
  void* view = nullptr;
  EXPECT_EQ(axon_memory_host_view(device_pointer, &view), AXON_SUCCESS) << axon_last_error_message();
  return view;
}

int device_count() {
  int count = 0;
  EXPECT_EQ(axon_device_count(&count), AXON_SUCCESS) << axon_last_error_message();
  return count;
}

size_t memory_used(int device) {
  size_t bytes = 0;
  EXPECT_EQ(axon_memory_used(device, &bytes), AXON_SUCCESS) << axon_last_error_message();
  return bytes;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

ScopedStream::ScopedStream(int device, int priority) {
  EXPECT_EQ(axon_stream_create(device, priority, &stream_), AXON_SUCCESS) << axon_last_error_message();
}

ScopedStream::~ScopedStream() {
  if (stream_ != nullptr) EXPECT_EQ(axon_stream_destroy(stream_), AXON_SUCCESS) << axon_last_error_message();
}

DeviceBuffer::DeviceBuffer(int device, size_t bytes) {
  EXPECT_EQ(axon_memory_allocate(device, bytes, &pointer_), AXON_SUCCESS) << axon_last_error_message();
}

DeviceBuffer::~DeviceBuffer() {
  if (pointer_ != nullptr) EXPECT_EQ(axon_memory_free(pointer_), AXON_SUCCESS) << axon_last_error_message();
}

}  // namespace axon_test
