// The Axon driver boundary: what a device driver implements.
//
// Everything above this boundary (the PyTorch integration, kernels, the
// compiler path, collectives) talks to the device only through these calls.
// The emulated driver in runtime/emulated implements them on the host CPU;
// a real chip's driver implements the same functions and passes the same
// conformance tests (runtime/tests).
//
//   status.h  status codes and per-thread error detail
//   device.h  enumeration, properties, device-wide sync, shutdown
//   memory.h  device memory, pinned host memory, copies
//   stream.h  in-order asynchronous work queues and task launch
//   event.h   markers for cross-stream ordering and timing
//
// Rules common to all calls: they return a status and never throw or abort;
// outputs are written only on success; handles are owned by the caller
// that created them and released with the matching *_destroy call.
#pragma once

#include "axon/device.h"
#include "axon/event.h"
#include "axon/memory.h"
#include "axon/status.h"
#include "axon/stream.h"
