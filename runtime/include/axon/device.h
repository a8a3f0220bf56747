// Devices: enumeration, properties, whole-device synchronization, shutdown.
//
// Devices are numbered 0..count-1. Every call is thread-safe. The driver
// initializes itself lazily on the first call; configuration is read once at
// that point (see the emulated driver's README for its environment variables).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "axon/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct axon_device_properties {
  char name[64];             // e.g. "Axon Emulated Device"
  size_t total_memory;       // capacity in bytes; allocations beyond it fail
  int stream_priority_low;   // numerically greatest (least urgent) priority
  int stream_priority_high;  // numerically smallest (most urgent) priority
  int launch_blocking;       // 1 if every launch completes before returning
  int memory_protected;      // 1 if host code cannot touch device memory
  int compute_units;         // units executing one kernel in parallel (>= 1); a scheduling hint
} axon_device_properties;

// Number of devices. Never fails before shutdown, unless the driver itself
// failed to initialize (e.g. malformed configuration), which every call then
// reports with the same status and detail; 0 is a valid answer.
axon_status axon_device_count(int* count);

axon_status axon_device_get_properties(int device, axon_device_properties* properties);

// What a driver can do beyond the required calls. Each answer is 0 or 1 and
// fixed for the driver's lifetime; callers check it once and choose their path.
typedef enum axon_capability {
  // Host code may read and write device memory through axon_memory_host_view
  // (the emulated driver: yes; a chip with its own memory: usually no).
  AXON_CAPABILITY_HOST_ADDRESSABLE_MEMORY = 1,
  // axon_stream_launch_host_function runs host code in stream order.
  AXON_CAPABILITY_HOST_FUNCTIONS = 2,
  // axon_memory_import_host adopts host memory as device memory.
  AXON_CAPABILITY_IMPORT_HOST_MEMORY = 3,
  // axon_executable_load accepts at least one format (axon/executable.h).
  AXON_CAPABILITY_EXECUTABLES = 4,
} axon_capability;

// *value = 1 if `device` has `capability`, else 0. An unknown capability is
// answered 0 (a newer caller on an older driver), not refused.
axon_status axon_device_get_capability(int device, axon_capability capability, int* value);

// Bytes still allocatable on the device and its capacity.
axon_status axon_device_memory_info(int device, size_t* free_bytes, size_t* total_bytes);

// Blocks until every stream of the device has drained. Returns the first task
// failure recorded on any of its streams since they were last synchronized
// (including streams destroyed since) as AXON_ERROR_TASK_FAILED, and clears
// the pending errors of all of them.
axon_status axon_device_synchronize(int device);

// Drains every stream, stops the worker threads and refuses further calls
// with AXON_ERROR_SHUT_DOWN. Memory frees after shutdown succeed silently so
// that owners destroyed late (e.g. at interpreter exit) do not fail. Idempotent.
axon_status axon_runtime_shutdown(void);

// 1 after axon_runtime_shutdown(), else 0. A process forked from one whose
// driver had started also counts as shut down: the child has none of the
// parent's worker threads, so every call there fails with
// AXON_ERROR_SHUT_DOWN (frees succeed silently), as CUDA refuses forked
// children too.
int axon_runtime_is_shut_down(void);

#ifdef __cplusplus
}  // extern "C"
#endif
