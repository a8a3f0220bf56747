// DriverEntryPoints<Driver>: the boundary's calls that each driver implements
// itself, because they depend on what its device memory and executables are.
// (The calls every driver shares are DeviceCalls, MemoryCalls,
// PinnedHostCalls, StreamCalls and ExecutableRegistry's
// axon_executable_destroy; driver_table.h puts both kinds in the table.)
//
// A driver defines each member for its own Driver type, as an explicit
// specialization in its entry-point files:
//
//   template <>
//   axon_status EntryPoints::axon_memory_free(void* ptr) { ... }
//
// and declares them, for every file that uses them (driver_table.h), by
// naming its type once after its namespace:
//
//   AXON_DECLARE_DRIVER_ENTRY_POINTS(axon::emulated::Driver)
//
// A member a driver leaves undefined fails at link time. The members carry
// the boundary's names, so `__func__` makes error details read
// "[axon_memory_free] ...".
#pragma once

#include "axon/driver_api.h"

namespace axon::common {

template <typename Driver>
struct DriverEntryPoints {
  // Declared with the public call's own type, so a definition that drifts from
  // the boundary's signature fails to compile.
  static decltype(::axon_memory_free) axon_memory_free;
  static decltype(::axon_memory_pointer_device) axon_memory_pointer_device;
  static decltype(::axon_memory_host_view) axon_memory_host_view;
  static decltype(::axon_memory_import_host) axon_memory_import_host;
  static decltype(::axon_executable_format_supported) axon_executable_format_supported;
  static decltype(::axon_executable_load) axon_executable_load;
  static decltype(::axon_stream_launch_executable) axon_stream_launch_executable;
  static decltype(::axon_executable_serialize) axon_executable_serialize;
};

}  // namespace axon::common

// The explicit specializations a driver defines, declared (see above).
#define AXON_DECLARE_DRIVER_ENTRY_POINTS(DriverType)                                                              \
  template <>                                                                                                     \
  decltype(::axon_memory_free) axon::common::DriverEntryPoints<DriverType>::axon_memory_free;                     \
  template <>                                                                                                     \
  decltype(::axon_memory_pointer_device) axon::common::DriverEntryPoints<DriverType>::axon_memory_pointer_device; \
  template <>                                                                                                     \
  decltype(::axon_memory_host_view) axon::common::DriverEntryPoints<DriverType>::axon_memory_host_view;           \
  template <>                                                                                                     \
  decltype(::axon_memory_import_host) axon::common::DriverEntryPoints<DriverType>::axon_memory_import_host;       \
  template <>                                                                                                     \
  decltype(::axon_executable_format_supported)                                                                    \
      axon::common::DriverEntryPoints<DriverType>::axon_executable_format_supported;                              \
  template <>                                                                                                     \
  decltype(::axon_executable_load) axon::common::DriverEntryPoints<DriverType>::axon_executable_load;             \
  template <>                                                                                                     \
  decltype(::axon_stream_launch_executable)                                                                       \
      axon::common::DriverEntryPoints<DriverType>::axon_stream_launch_executable;                                 \
  template <>                                                                                                     \
  decltype(::axon_executable_serialize) axon::common::DriverEntryPoints<DriverType>::axon_executable_serialize;
