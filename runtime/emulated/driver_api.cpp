// The emulated driver's table (axon/driver_api.h): its entry points, by slot.

#include "axon/driver_api.h"

#include "entry_points.h"

namespace axon::emulated {

const axon_driver_api* driver_api() {
  using namespace entry_points;
  static const axon_driver_api table = {
      sizeof(axon_driver_api),
      AXON_DRIVER_ABI_VERSION,
      "emulated",
      &axon_last_error_message,
      &axon_device_count,
      &axon_device_get_properties,
      &axon_device_get_capability,
      &axon_device_memory_info,
      &axon_device_synchronize,
      &axon_runtime_shutdown,
      &axon_runtime_is_shut_down,
      &axon_memory_allocate,
      &axon_memory_free,
      &axon_memory_pointer_device,
      &axon_memory_used,
      &axon_memory_host_view,
      &axon_memory_import_host,
      &axon_host_allocate,
      &axon_host_free,
      &axon_host_pointer_is_pinned,
      &axon_memory_copy_async,
      &axon_memory_copy,
      &axon_memory_set_async,
      &axon_stream_priority_range,
      &axon_stream_create,
      &axon_stream_destroy,
      &axon_stream_get_default,
      &axon_stream_get_device,
      &axon_stream_get_priority,
      &axon_stream_launch_host_function,
      &axon_stream_query,
      &axon_stream_synchronize,
      &axon_event_create,
      &axon_event_destroy,
      &axon_event_record,
      &axon_event_query,
      &axon_event_synchronize,
      &axon_stream_wait_event,
      &axon_event_elapsed_time,
      &axon_event_get_device,
      &axon_executable_format_supported,
      &axon_executable_load,
      &axon_executable_destroy,
      &axon_stream_launch_executable,
      &axon_executable_serialize,
  };
  return &table;
}

}  // namespace axon::emulated
