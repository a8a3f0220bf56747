// The null driver: every call is refused with AXON_ERROR_NOT_SUPPORTED.
//
// It is the skeleton a new chip's driver starts from (README.md): each slot
// below is one call of the boundary, in the order of axon_driver_api, and
// says what the call must do once implemented. The two rules that hold even
// here: a host function handed to the driver is released exactly once, and
// the calling thread's error detail names the refused call.

#include "null_driver.h"

#include <string>

namespace axon::null_driver {
namespace {

thread_local std::string last_error;

axon_status refuse(const char* call) {
  last_error = std::string("[") + call + "] not supported by the null driver (a skeleton that implements nothing)";
  return AXON_ERROR_NOT_SUPPORTED;
}

const char* last_error_message() { return last_error.c_str(); }

// device.h: device_count must answer before anything else works; properties,
// capabilities (answer 0 for what you lack), memory info, synchronize, shutdown.
axon_status device_count(int*) { return refuse("axon_device_count"); }
axon_status device_get_properties(int, axon_device_properties*) { return refuse("axon_device_get_properties"); }
axon_status device_get_capability(int, axon_capability, int*) { return refuse("axon_device_get_capability"); }
axon_status device_memory_info(int, size_t*, size_t*) { return refuse("axon_device_memory_info"); }
axon_status device_synchronize(int) { return refuse("axon_device_synchronize"); }
axon_status runtime_shutdown() { return refuse("axon_runtime_shutdown"); }
int runtime_is_shut_down() { return 0; }

// memory.h: allocation, frees, pointer queries, copies. host_view and
// import_host are optional (a chip with its own memory refuses them).
axon_status memory_allocate(int, size_t, void**) { return refuse("axon_memory_allocate"); }
axon_status memory_free(void*) { return refuse("axon_memory_free"); }
axon_status memory_pointer_device(const void*, int*) { return refuse("axon_memory_pointer_device"); }
axon_status memory_used(int, size_t*) { return refuse("axon_memory_used"); }
axon_status memory_host_view(const void*, void**) { return refuse("axon_memory_host_view"); }
axon_status memory_import_host(int, void*, size_t, void**) { return refuse("axon_memory_import_host"); }
axon_status host_allocate(size_t, void**) { return refuse("axon_host_allocate"); }
axon_status host_free(void*) { return refuse("axon_host_free"); }
axon_status host_pointer_is_pinned(const void*, int*) { return refuse("axon_host_pointer_is_pinned"); }
axon_status memory_copy_async(void*, const void*, size_t, axon_stream) { return refuse("axon_memory_copy_async"); }
axon_status memory_copy(void*, const void*, size_t, axon_stream) { return refuse("axon_memory_copy"); }
axon_status memory_set_async(void*, int, size_t, axon_stream) { return refuse("axon_memory_set_async"); }

// stream.h: in-order queues. Host functions are optional, but a refused one
// is still owned by the driver and released.
axon_status stream_priority_range(int*, int*) { return refuse("axon_stream_priority_range"); }
axon_status stream_create(int, int, axon_stream*) { return refuse("axon_stream_create"); }
axon_status stream_destroy(axon_stream) { return refuse("axon_stream_destroy"); }
axon_status stream_get_default(int, axon_stream*) { return refuse("axon_stream_get_default"); }
axon_status stream_get_device(axon_stream, int*) { return refuse("axon_stream_get_device"); }
axon_status stream_get_priority(axon_stream, int*) { return refuse("axon_stream_get_priority"); }
axon_status stream_launch_host_function(axon_stream, axon_host_function task) {
  if (task.release != nullptr) task.release(task.user_data);
  return refuse("axon_stream_launch_host_function");
}
axon_status stream_query(axon_stream) { return refuse("axon_stream_query"); }
axon_status stream_get_submission_count(axon_stream, uint64_t*) { return refuse("axon_stream_get_submission_count"); }
axon_status stream_run_host_function_if_idle(axon_stream, axon_host_function) {
  return refuse("axon_stream_run_host_function_if_idle");
}
axon_status stream_synchronize(axon_stream) { return refuse("axon_stream_synchronize"); }

// event.h: markers in streams, cross-stream waits, timing.
axon_status event_create(unsigned, axon_event*) { return refuse("axon_event_create"); }
axon_status event_destroy(axon_event) { return refuse("axon_event_destroy"); }
axon_status event_record(axon_event, axon_stream) { return refuse("axon_event_record"); }
axon_status event_query(axon_event) { return refuse("axon_event_query"); }
axon_status event_synchronize(axon_event) { return refuse("axon_event_synchronize"); }
axon_status stream_wait_event(axon_stream, axon_event) { return refuse("axon_stream_wait_event"); }
axon_status event_elapsed_time(axon_event, axon_event, float*) { return refuse("axon_event_elapsed_time"); }
axon_status event_get_device(axon_event, int*) { return refuse("axon_event_get_device"); }

// executable.h: your chip's programs (optional, but without them only
// host functions can compute, and only with host-addressable memory).
axon_status executable_format_supported(int, const char*, int*) { return refuse("axon_executable_format_supported"); }
axon_status executable_load(int, const char*, const void*, size_t, axon_executable*) {
  return refuse("axon_executable_load");
}
axon_status executable_destroy(axon_executable) { return refuse("axon_executable_destroy"); }
axon_status stream_launch_executable(axon_stream, axon_executable, const char*, const axon_binding*, size_t,
                                     const void*, size_t) {
  return refuse("axon_stream_launch_executable");
}
axon_status executable_serialize(axon_executable, const char**, void*, size_t, size_t*) {
  return refuse("axon_executable_serialize");
}

// activity.h: when each queued item ran (optional; without it a profiler
// shows no device rows).
axon_status activity_start() { return refuse("axon_activity_start"); }
axon_status activity_stop() { return refuse("axon_activity_stop"); }
axon_status activity_set_correlation(uint64_t) { return refuse("axon_activity_set_correlation"); }
axon_status activity_set_label(const char*) { return refuse("axon_activity_set_label"); }
axon_status activity_collect(void*, size_t, size_t, size_t*, size_t*) { return refuse("axon_activity_collect"); }

}  // namespace

const axon_driver_api* driver_api() {
  static const axon_driver_api table = {
      sizeof(axon_driver_api),
      AXON_DRIVER_ABI_VERSION,
      "null",
      &last_error_message,
      &device_count,
      &device_get_properties,
      &device_get_capability,
      &device_memory_info,
      &device_synchronize,
      &runtime_shutdown,
      &runtime_is_shut_down,
      &memory_allocate,
      &memory_free,
      &memory_pointer_device,
      &memory_used,
      &memory_host_view,
      &memory_import_host,
      &host_allocate,
      &host_free,
      &host_pointer_is_pinned,
      &memory_copy_async,
      &memory_copy,
      &memory_set_async,
      &stream_priority_range,
      &stream_create,
      &stream_destroy,
      &stream_get_default,
      &stream_get_device,
      &stream_get_priority,
      &stream_launch_host_function,
      &stream_query,
      &stream_synchronize,
      &event_create,
      &event_destroy,
      &event_record,
      &event_query,
      &event_synchronize,
      &stream_wait_event,
      &event_elapsed_time,
      &event_get_device,
      &executable_format_supported,
      &executable_load,
      &executable_destroy,
      &stream_launch_executable,
      &executable_serialize,
      &activity_start,
      &activity_stop,
      &activity_set_correlation,
      &activity_set_label,
      &activity_collect,
      &stream_get_submission_count,
      &stream_run_host_function_if_idle,
  };
  return &table;
}

}  // namespace axon::null_driver
