// The PJRT driver's table (axon/driver_api.h): its entry points, by slot.

#include "axon/driver_api.h"

#include "device_calls.h"
#include "driver.h"
#include "entry_points.h"
#include "pinned_host_calls.h"
#include "stream_calls.h"

using namespace axon::common;

namespace axon::pjrt_driver {

const axon_driver_api* driver_api() {
  using namespace entry_points;
  using Devices = common::DeviceCalls<Driver>;
  using Streams = common::StreamCalls<Driver>;
  using PinnedHost = common::PinnedHostCalls<Driver>;
  static const axon_driver_api table = {
      sizeof(axon_driver_api),
      AXON_DRIVER_ABI_VERSION,
      "pjrt",
      &common::last_error_message,
      &Devices::axon_device_count,
      &axon_device_get_properties,
      &axon_device_get_capability,
      &Devices::axon_device_memory_info,
      &Devices::axon_device_synchronize,
      &Devices::axon_runtime_shutdown,
      &Devices::axon_runtime_is_shut_down,
      &axon_memory_allocate,
      &axon_memory_free,
      &axon_memory_pointer_device,
      &Devices::axon_memory_used,
      &axon_memory_host_view,
      &axon_memory_import_host,
      &PinnedHost::axon_host_allocate,
      &PinnedHost::axon_host_free,
      &PinnedHost::axon_host_pointer_is_pinned,
      &axon_memory_copy_async,
      &axon_memory_copy,
      &axon_memory_set_async,
      &Streams::axon_stream_priority_range,
      &Streams::axon_stream_create,
      &Streams::axon_stream_destroy,
      &Streams::axon_stream_get_default,
      &Streams::axon_stream_get_device,
      &Streams::axon_stream_get_priority,
      &Streams::axon_stream_launch_host_function,
      &Streams::axon_stream_query,
      &Streams::axon_stream_synchronize,
      &Streams::axon_event_create,
      &Streams::axon_event_destroy,
      &Streams::axon_event_record,
      &Streams::axon_event_query,
      &Streams::axon_event_synchronize,
      &Streams::axon_stream_wait_event,
      &Streams::axon_event_elapsed_time,
      &Streams::axon_event_get_device,
      &axon_executable_format_supported,
      &axon_executable_load,
      &axon_executable_destroy,
      &axon_stream_launch_executable,
      &axon_executable_serialize,
  };
  return &table;
}

}  // namespace axon::pjrt_driver
