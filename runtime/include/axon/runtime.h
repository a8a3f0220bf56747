// The Axon driver boundary: what a device driver implements.
//
// Everything above this boundary (the PyTorch integration, kernels, the
// compiler path, collectives) talks to the device only through these calls.
// They reach the driver chosen at run time (AXON_DRIVER, see driver_api.h):
// the emulated driver (runtime/emulated) implements them on the host CPU; a
// real chip's driver implements the same table and passes the same
// conformance tests (runtime/tests, run against any driver); the null driver
// (runtime/null) is the skeleton to start from.
//
//   status.h      status codes and per-thread error detail
//   device.h      enumeration, properties, capabilities, device-wide sync, shutdown
//   memory.h      device memory, pinned host memory, copies
//   stream.h      in-order asynchronous work queues; host functions
//   event.h       markers for cross-stream ordering and timing
//   executable.h  device programs: load, launch on a stream with bindings
//   activity.h    records of when queued work ran, for profilers
//   driver_api.h  the table a driver library exports, and how one is chosen
//
// Rules common to all calls: they return a status and never throw or abort;
// outputs are written only on success; handles are owned by the caller
// that created them and released with the matching *_destroy call.
#pragma once

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

// Name of the driver in use ("emulated", "null", or the library's own name),
// loading it if no call has yet; "unloaded" if it failed to load.
const char* axon_driver_name(void);

#ifdef __cplusplus
}  // extern "C"
#endif
