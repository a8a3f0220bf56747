// What a driver library exports: one table of the boundary's calls.
//
// Code above the boundary calls the axon_* functions of the other headers.
// Those are implemented by the loader (runtime/loader), which picks a driver
// once, on the first call, from AXON_DRIVER:
//
//   unset or "emulated"   the emulated driver built into the loader
//   "null"                the null driver built into the loader (runtime/null)
//   "pjrt"                the PJRT driver (runtime/pjrt_driver), the library
//                         libaxon_driver_pjrt.so next to the one holding the loader
//   a path to a .so       a driver library, loaded with dlopen
//
// A driver library exports one C function, AXON_DRIVER_ENTRY_POINT, returning
// its table (a static object that lives as long as the process). Each slot has
// the signature and contract of the axon_* call it is named after (without
// the prefix); axon_status_name is the loader's own. Every slot must be set:
// a driver without an optional capability fills its slot with a function that
// returns AXON_ERROR_NOT_SUPPORTED (see runtime/null for the skeleton).
//
// Versioning: `abi_version` is AXON_DRIVER_ABI_VERSION of the headers the
// driver was built with; the loader refuses another major version, and reads
// only the first `struct_size` bytes (newer slots are appended at the end).
// A driver that fails to load (missing file or symbol, wrong version) makes
// every call fail with AXON_ERROR_SYSTEM and a detail saying why.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "axon/activity.h"
#include "axon/device.h"
#include "axon/event.h"
#include "axon/executable.h"
#include "axon/memory.h"
#include "axon/status.h"
#include "axon/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AXON_DRIVER_ABI_VERSION 1u
#define AXON_DRIVER_ENTRY_POINT "axon_driver_get_api"

typedef struct axon_driver_api {
  size_t struct_size;    // sizeof(axon_driver_api) as the driver was built
  uint32_t abi_version;  // AXON_DRIVER_ABI_VERSION
  const char* name;      // e.g. "emulated"; shown by torch.axon.driver_name()

  // status.h
  const char* (*last_error_message)(void);
  // device.h
  axon_status (*device_count)(int* count);
  axon_status (*device_get_properties)(int device, axon_device_properties* properties);
  axon_status (*device_get_capability)(int device, axon_capability capability, int* value);
  axon_status (*device_memory_info)(int device, size_t* free_bytes, size_t* total_bytes);
  axon_status (*device_synchronize)(int device);
  axon_status (*runtime_shutdown)(void);
  int (*runtime_is_shut_down)(void);
  // memory.h
  axon_status (*memory_allocate)(int device, size_t bytes, void** ptr);
  axon_status (*memory_free)(void* ptr);
  axon_status (*memory_pointer_device)(const void* ptr, int* device);
  axon_status (*memory_used)(int device, size_t* bytes);
  axon_status (*memory_host_view)(const void* ptr, void** host_ptr);
  axon_status (*memory_import_host)(int device, void* host_ptr, size_t bytes, void** device_ptr);
  axon_status (*host_allocate)(size_t bytes, void** ptr);
  axon_status (*host_free)(void* ptr);
  axon_status (*host_pointer_is_pinned)(const void* ptr, int* pinned);
  axon_status (*memory_copy_async)(void* dst, const void* src, size_t bytes, axon_stream stream);
  axon_status (*memory_copy)(void* dst, const void* src, size_t bytes, axon_stream stream);
  axon_status (*memory_set_async)(void* dst, int value, size_t bytes, axon_stream stream);
  // stream.h
  axon_status (*stream_priority_range)(int* least_urgent, int* most_urgent);
  axon_status (*stream_create)(int device, int priority, axon_stream* stream);
  axon_status (*stream_destroy)(axon_stream stream);
  axon_status (*stream_get_default)(int device, axon_stream* stream);
  axon_status (*stream_get_device)(axon_stream stream, int* device);
  axon_status (*stream_get_priority)(axon_stream stream, int* priority);
  axon_status (*stream_launch_host_function)(axon_stream stream, axon_host_function task);
  axon_status (*stream_query)(axon_stream stream);
  axon_status (*stream_synchronize)(axon_stream stream);
  // event.h
  axon_status (*event_create)(unsigned flags, axon_event* event);
  axon_status (*event_destroy)(axon_event event);
  axon_status (*event_record)(axon_event event, axon_stream stream);
  axon_status (*event_query)(axon_event event);
  axon_status (*event_synchronize)(axon_event event);
  axon_status (*stream_wait_event)(axon_stream stream, axon_event event);
  axon_status (*event_elapsed_time)(axon_event start, axon_event end, float* milliseconds);
  axon_status (*event_get_device)(axon_event event, int* device);
  // executable.h
  axon_status (*executable_format_supported)(int device, const char* format, int* supported);
  axon_status (*executable_load)(int device, const char* format, const void* image, size_t image_bytes,
                                 axon_executable* executable);
  axon_status (*executable_destroy)(axon_executable executable);
  axon_status (*stream_launch_executable)(axon_stream stream, axon_executable executable, const char* entry_point,
                                          const axon_binding* bindings, size_t binding_count, const void* constants,
                                          size_t constant_bytes);
  // Appended after ABI 1.0's first drivers: read only within struct_size.
  axon_status (*executable_serialize)(axon_executable executable, const char** format, void* image, size_t capacity,
                                      size_t* image_bytes);
  // activity.h (appended after executable_serialize)
  axon_status (*activity_start)(void);
  axon_status (*activity_stop)(void);
  axon_status (*activity_set_correlation)(uint64_t correlation);
  axon_status (*activity_set_label)(const char* label);
  axon_status (*activity_collect)(void* records, size_t record_size, size_t capacity, size_t* count, size_t* dropped);
  // stream.h (appended after activity_collect)
  axon_status (*stream_get_submission_count)(axon_stream stream, uint64_t* count);
  // stream.h (appended after stream_get_submission_count)
  axon_status (*stream_run_host_function_if_idle)(axon_stream stream, axon_host_function task);
} axon_driver_api;

// The symbol a driver library exports (AXON_DRIVER_ENTRY_POINT).
typedef const axon_driver_api* (*axon_driver_get_api_fn)(void);

#ifdef __cplusplus
}  // extern "C"
#endif
