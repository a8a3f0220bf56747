// driver_table<Driver>(name): a driver's table (axon/driver_api.h), slot by
// slot, from its own entry points (DriverEntryPoints<Driver>) and the shared
// ones (ActivityCalls, DeviceCalls, ExecutableRegistry, MemoryCalls,
// PinnedHostCalls, StreamCalls). Written once, so every
// driver built on runtime/common fills the slots in the same order.
//
// A driver keeps the result for the process's lifetime:
//   static const axon_driver_api table = common::driver_table<Driver>("name");
#pragma once

#include "activity_calls.h"
#include "axon/driver_api.h"
#include "boundary.h"
#include "device_calls.h"
#include "driver_entry_points.h"
#include "executable_registry.h"
#include "memory_calls.h"
#include "pinned_host_calls.h"
#include "stream_calls.h"

namespace axon::common {

template <typename Driver>
axon_driver_api driver_table(const char* name) {
  using Own = DriverEntryPoints<Driver>;
  using Activity = ActivityCalls<Driver>;
  using Devices = DeviceCalls<Driver>;
  using Executables = ExecutableRegistry<Driver>;
  using Memory = MemoryCalls<Driver>;
  using PinnedHost = PinnedHostCalls<Driver>;
  using Streams = StreamCalls<Driver>;
  return {
      sizeof(axon_driver_api),
      AXON_DRIVER_ABI_VERSION,
      name,
      &last_error_message,
      &Devices::axon_device_count,
      &Devices::axon_device_get_properties,
      &Devices::axon_device_get_capability,
      &Devices::axon_device_memory_info,
      &Devices::axon_device_synchronize,
      &Devices::axon_runtime_shutdown,
      &Devices::axon_runtime_is_shut_down,
      &Memory::axon_memory_allocate,
      &Own::axon_memory_free,
      &Own::axon_memory_pointer_device,
      &Devices::axon_memory_used,
      &Own::axon_memory_host_view,
      &Own::axon_memory_import_host,
      &PinnedHost::axon_host_allocate,
      &PinnedHost::axon_host_free,
      &PinnedHost::axon_host_pointer_is_pinned,
      &Memory::axon_memory_copy_async,
      &Memory::axon_memory_copy,
      &Memory::axon_memory_set_async,
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
      &Own::axon_executable_format_supported,
      &Own::axon_executable_load,
      &Executables::axon_executable_destroy,
      &Own::axon_stream_launch_executable,
      &Own::axon_executable_serialize,
      &Activity::axon_activity_start,
      &Activity::axon_activity_stop,
      &Activity::axon_activity_set_correlation,
      &Activity::axon_activity_set_label,
      &Activity::axon_activity_collect,
      &Streams::axon_stream_get_submission_count,
      &Streams::axon_stream_run_host_function_if_idle,
  };
}

}  // namespace axon::common
