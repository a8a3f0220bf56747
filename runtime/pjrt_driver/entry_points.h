// The PJRT driver's own implementation of the boundary's calls (the stream,
// event and pinned-host calls are runtime/common's). Named as the boundary's
// calls, so error details read "[axon_memory_copy] ...", and reached only
// through the table (driver_api.cpp).
#pragma once

#include "axon/driver_api.h"

namespace axon::pjrt_driver {

// The table, for library_entry.cpp.
const axon_driver_api* driver_api();

namespace entry_points {

// Declared with the public call's own type, so a definition that drifts from
// the boundary's signature fails to compile.
decltype(::axon_device_get_properties) axon_device_get_properties;
decltype(::axon_device_get_capability) axon_device_get_capability;
decltype(::axon_memory_allocate) axon_memory_allocate;
decltype(::axon_memory_free) axon_memory_free;
decltype(::axon_memory_pointer_device) axon_memory_pointer_device;
decltype(::axon_memory_host_view) axon_memory_host_view;
decltype(::axon_memory_import_host) axon_memory_import_host;
decltype(::axon_memory_copy_async) axon_memory_copy_async;
decltype(::axon_memory_copy) axon_memory_copy;
decltype(::axon_memory_set_async) axon_memory_set_async;
decltype(::axon_executable_format_supported) axon_executable_format_supported;
decltype(::axon_executable_load) axon_executable_load;
decltype(::axon_executable_destroy) axon_executable_destroy;
decltype(::axon_stream_launch_executable) axon_stream_launch_executable;
decltype(::axon_executable_serialize) axon_executable_serialize;

}  // namespace entry_points
}  // namespace axon::pjrt_driver
