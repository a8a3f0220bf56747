// The boundary's axon_* calls: each forwards to the chosen driver's slot.

#include <string>

#include "axon/driver_api.h"
#include "axon/runtime.h"
#include "driver_choice.h"

using axon::loader::chosen_driver;

namespace {

// Calls `slot` of the chosen driver, or reports why it cannot: the driver did
// not load (AXON_ERROR_SYSTEM), or it predates the slot (AXON_ERROR_NOT_SUPPORTED).
template <typename Slot, typename... Arguments>
axon_status forward(const char* call, Slot axon_driver_api::* slot, Arguments... arguments) {
  const axon_driver_api* driver = chosen_driver(call);
  if (driver == nullptr) return AXON_ERROR_SYSTEM;
  if (driver->*slot == nullptr) {
    axon::loader::set_loader_error(
        call,
        (std::string("driver \"") + driver->name + "\" predates this call (built for an older boundary)").c_str());
    return AXON_ERROR_NOT_SUPPORTED;
  }
  axon::loader::forget_loader_error();
  return (driver->*slot)(arguments...);
}

}  // namespace

extern "C" {

const char* axon_last_error_message(void) {
  if (const char* own = axon::loader::loader_error_message()) return own;
  const axon_driver_api* driver = chosen_driver("axon_last_error_message");
  return driver != nullptr ? driver->last_error_message() : axon::loader::loader_error_message();
}

const char* axon_driver_name(void) {
  const axon_driver_api* driver = chosen_driver("axon_driver_name");
  return driver != nullptr ? driver->name : "unloaded";
}

axon_status axon_device_count(int* count) { return forward(__func__, &axon_driver_api::device_count, count); }
axon_status axon_device_get_properties(int device, axon_device_properties* properties) {
  return forward(__func__, &axon_driver_api::device_get_properties, device, properties);
}
axon_status axon_device_get_capability(int device, axon_capability capability, int* value) {
  return forward(__func__, &axon_driver_api::device_get_capability, device, capability, value);
}
axon_status axon_device_memory_info(int device, size_t* free_bytes, size_t* total_bytes) {
  return forward(__func__, &axon_driver_api::device_memory_info, device, free_bytes, total_bytes);
}
axon_status axon_device_synchronize(int device) {
  return forward(__func__, &axon_driver_api::device_synchronize, device);
}
axon_status axon_runtime_shutdown(void) { return forward(__func__, &axon_driver_api::runtime_shutdown); }
int axon_runtime_is_shut_down(void) {
  const axon_driver_api* driver = chosen_driver(__func__);
  return driver != nullptr && driver->runtime_is_shut_down != nullptr ? driver->runtime_is_shut_down() : 0;
}

axon_status axon_memory_allocate(int device, size_t bytes, void** ptr) {
  return forward(__func__, &axon_driver_api::memory_allocate, device, bytes, ptr);
}
axon_status axon_memory_free(void* ptr) { return forward(__func__, &axon_driver_api::memory_free, ptr); }
axon_status axon_memory_pointer_device(const void* ptr, int* device) {
  return forward(__func__, &axon_driver_api::memory_pointer_device, ptr, device);
}
axon_status axon_memory_used(int device, size_t* bytes) {
  return forward(__func__, &axon_driver_api::memory_used, device, bytes);
}
axon_status axon_memory_host_view(const void* ptr, void** host_ptr) {
  return forward(__func__, &axon_driver_api::memory_host_view, ptr, host_ptr);
}
axon_status axon_memory_import_host(int device, void* host_ptr, size_t bytes, void** device_ptr) {
  return forward(__func__, &axon_driver_api::memory_import_host, device, host_ptr, bytes, device_ptr);
}
axon_status axon_host_allocate(size_t bytes, void** ptr) {
  return forward(__func__, &axon_driver_api::host_allocate, bytes, ptr);
}
axon_status axon_host_free(void* ptr) { return forward(__func__, &axon_driver_api::host_free, ptr); }
axon_status axon_host_pointer_is_pinned(const void* ptr, int* pinned) {
  return forward(__func__, &axon_driver_api::host_pointer_is_pinned, ptr, pinned);
}
axon_status axon_memory_copy_async(void* dst, const void* src, size_t bytes, axon_stream stream) {
  return forward(__func__, &axon_driver_api::memory_copy_async, dst, src, bytes, stream);
}
axon_status axon_memory_copy(void* dst, const void* src, size_t bytes, axon_stream stream) {
  return forward(__func__, &axon_driver_api::memory_copy, dst, src, bytes, stream);
}
axon_status axon_memory_set_async(void* dst, int value, size_t bytes, axon_stream stream) {
  return forward(__func__, &axon_driver_api::memory_set_async, dst, value, bytes, stream);
}

axon_status axon_stream_priority_range(int* least_urgent, int* most_urgent) {
  return forward(__func__, &axon_driver_api::stream_priority_range, least_urgent, most_urgent);
}
axon_status axon_stream_create(int device, int priority, axon_stream* stream) {
  return forward(__func__, &axon_driver_api::stream_create, device, priority, stream);
}
axon_status axon_stream_destroy(axon_stream stream) {
  return forward(__func__, &axon_driver_api::stream_destroy, stream);
}
axon_status axon_stream_get_default(int device, axon_stream* stream) {
  return forward(__func__, &axon_driver_api::stream_get_default, device, stream);
}
axon_status axon_stream_get_device(axon_stream stream, int* device) {
  return forward(__func__, &axon_driver_api::stream_get_device, stream, device);
}
axon_status axon_stream_get_priority(axon_stream stream, int* priority) {
  return forward(__func__, &axon_driver_api::stream_get_priority, stream, priority);
}
axon_status axon_stream_launch_host_function(axon_stream stream, axon_host_function task) {
  const axon_status status = forward(__func__, &axon_driver_api::stream_launch_host_function, stream, task);
  // The driver owns `task` once called; when it never was, its release is still owed exactly once.
  if (axon::loader::loader_error_message() != nullptr && task.release != nullptr) task.release(task.user_data);
  return status;
}
axon_status axon_stream_query(axon_stream stream) { return forward(__func__, &axon_driver_api::stream_query, stream); }
axon_status axon_stream_synchronize(axon_stream stream) {
  return forward(__func__, &axon_driver_api::stream_synchronize, stream);
}

axon_status axon_event_create(unsigned flags, axon_event* event) {
  return forward(__func__, &axon_driver_api::event_create, flags, event);
}
axon_status axon_event_destroy(axon_event event) { return forward(__func__, &axon_driver_api::event_destroy, event); }
axon_status axon_event_record(axon_event event, axon_stream stream) {
  return forward(__func__, &axon_driver_api::event_record, event, stream);
}
axon_status axon_event_query(axon_event event) { return forward(__func__, &axon_driver_api::event_query, event); }
axon_status axon_event_synchronize(axon_event event) {
  return forward(__func__, &axon_driver_api::event_synchronize, event);
}
axon_status axon_stream_wait_event(axon_stream stream, axon_event event) {
  return forward(__func__, &axon_driver_api::stream_wait_event, stream, event);
}
axon_status axon_event_elapsed_time(axon_event start, axon_event end, float* milliseconds) {
  return forward(__func__, &axon_driver_api::event_elapsed_time, start, end, milliseconds);
}
axon_status axon_event_get_device(axon_event event, int* device) {
  return forward(__func__, &axon_driver_api::event_get_device, event, device);
}

axon_status axon_executable_format_supported(int device, const char* format, int* supported) {
  return forward(__func__, &axon_driver_api::executable_format_supported, device, format, supported);
}
axon_status axon_executable_load(int device, const char* format, const void* image, size_t image_bytes,
                                 axon_executable* executable) {
  return forward(__func__, &axon_driver_api::executable_load, device, format, image, image_bytes, executable);
}
axon_status axon_executable_serialize(axon_executable executable, const char** format, void* image, size_t capacity,
                                      size_t* image_bytes) {
  return forward(__func__, &axon_driver_api::executable_serialize, executable, format, image, capacity, image_bytes);
}
axon_status axon_executable_destroy(axon_executable executable) {
  return forward(__func__, &axon_driver_api::executable_destroy, executable);
}
axon_status axon_stream_launch_executable(axon_stream stream, axon_executable executable, const char* entry_point,
                                          const axon_binding* bindings, size_t binding_count, const void* constants,
                                          size_t constant_bytes) {
  return forward(__func__, &axon_driver_api::stream_launch_executable, stream, executable, entry_point, bindings,
                 binding_count, constants, constant_bytes);
}

axon_status axon_activity_start(void) { return forward(__func__, &axon_driver_api::activity_start); }
axon_status axon_activity_stop(void) { return forward(__func__, &axon_driver_api::activity_stop); }
axon_status axon_activity_set_correlation(uint64_t correlation) {
  return forward(__func__, &axon_driver_api::activity_set_correlation, correlation);
}
axon_status axon_activity_set_label(const char* label) {
  return forward(__func__, &axon_driver_api::activity_set_label, label);
}
axon_status axon_stream_get_submission_count(axon_stream stream, uint64_t* count) {
  return forward(__func__, &axon_driver_api::stream_get_submission_count, stream, count);
}
axon_status axon_stream_run_host_function_if_idle(axon_stream stream, axon_host_function task) {
  return forward(__func__, &axon_driver_api::stream_run_host_function_if_idle, stream, task);
}
axon_status axon_activity_collect(void* records, size_t record_size, size_t capacity, size_t* count, size_t* dropped) {
  return forward(__func__, &axon_driver_api::activity_collect, records, record_size, capacity, count, dropped);
}

}  // extern "C"
