// Executable format "host-shared-object": native code for the host CPU.
//
// For drivers whose device is the host (the emulated driver), as IREE's CPU
// drivers run native executables: the image is an ELF shared object for the
// host's architecture, and each entry point is an exported C function
//
//   int entry(const axon_host_dispatch* dispatch, char* message);
//
// called on the device's worker, in stream order, with the host addresses of
// its bindings. It returns 0 on success, or writes a NUL-terminated message of
// at most AXON_TASK_MESSAGE_CAPACITY bytes into `message` and returns
// nonzero: the launch then fails like any device work (AXON_ERROR_TASK_FAILED
// at the next synchronizing call, with that message). An entry point must not
// call back into the driver.
#pragma once

#include <stddef.h>

#define AXON_FORMAT_HOST_SHARED_OBJECT "host-shared-object"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct axon_host_dispatch {
  void* const* bindings;        // host address of each binding's first byte
  const size_t* binding_bytes;  // and its size, as launched
  size_t binding_count;
  const void* constants;  // the launch's constant bytes (null if none)
  size_t constant_bytes;
} axon_host_dispatch;

#ifdef __cplusplus
}  // extern "C"
#endif
