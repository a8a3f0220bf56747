// Executables: device programs, loaded once and launched on streams.
//
// An executable is a program in a format the driver names (a string such as
// "host-shared-object"; see axon/formats/ for the formats this project
// defines). The driver loads it for one device, and each launch runs one of
// its entry points on a stream, in stream order with copies, events and other
// launches, with its buffer bindings (device memory) and a block of constant
// bytes (the scalars a kernel takes by value). A real chip's driver loads its
// own binaries here (a PJRT executable, a cubin, an IREE executable); the
// emulated driver loads native host code.
//
// Ownership: the caller owns an axon_executable from load to destroy. Destroy
// may be called while launches are still queued: the driver keeps the program
// alive until they have run. Bindings and constants are copied at launch, so
// the caller may reuse its arrays at once; the memory a binding names must
// stay allocated until the launch has run (stream semantics, as for copies).
//
// Failures: loading reports a malformed or unsupported image at once
// (AXON_ERROR_INVALID_VALUE, or AXON_ERROR_NOT_SUPPORTED for a format the
// driver does not take, with a detail); a launch checks its arguments at once
// (unknown entry point, a binding outside device memory: AXON_ERROR_INVALID_VALUE)
// and reports what the program itself fails at like any failed device work
// (axon/stream.h, "Errors").
//
// Optional slot: a driver without executables answers
// AXON_CAPABILITY_EXECUTABLES with 0 and every call with AXON_ERROR_NOT_SUPPORTED.
//
// Thread-safety: every call is thread-safe; an executable may be launched from
// several threads and on several streams of its device at once.
#pragma once

#include <stddef.h>

#include "axon/status.h"
#include "axon/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct axon_executable_object* axon_executable;

// One buffer an entry point reads or writes: device memory of the launch's
// device (a pointer anywhere inside a live allocation or import) and the
// bytes from there that the program may touch. A binding of 0 bytes (an
// empty array) may hold any pointer, null included: it is never dereferenced.
typedef struct axon_binding {
  void* device_ptr;
  size_t bytes;
} axon_binding;

// *supported = 1 if `device` loads executables in `format`, else 0.
axon_status axon_executable_format_supported(int device, const char* format, int* supported);

// Loads `image_bytes` bytes at `image` (copied; the caller may free them after
// the call) as an executable of `format` for `device`.
axon_status axon_executable_load(int device, const char* format, const void* image, size_t image_bytes,
                                 axon_executable* executable);

// The driver's own image of `executable`: what it made of the loaded program
// (a compiled binary), in a format the driver names in `*format` (a string the
// driver owns for the life of the process) and loads again with
// axon_executable_load without compiling. This is what a compile cache keeps
// on disk. Call it with `image` null to learn `*image_bytes`, then with a
// buffer of at least that many bytes (`capacity`); a smaller buffer is
// AXON_ERROR_INVALID_VALUE. Optional: AXON_ERROR_NOT_SUPPORTED for a program
// that has no such image. An image is valid only for the driver build that
// wrote it; another build refuses it at load with AXON_ERROR_INVALID_VALUE.
axon_status axon_executable_serialize(axon_executable executable, const char** format, void* image, size_t capacity,
                                      size_t* image_bytes);

// Releases the caller's handle; queued launches still run (see Ownership).
axon_status axon_executable_destroy(axon_executable executable);

// Queues entry point `entry_point` of `executable` on `stream` (of the same
// device) with `binding_count` bindings and `constant_bytes` bytes of
// constants (either may be 0 with a null array). Returns once queued.
axon_status axon_stream_launch_executable(axon_stream stream, axon_executable executable, const char* entry_point,
                                          const axon_binding* bindings, size_t binding_count, const void* constants,
                                          size_t constant_bytes);

#ifdef __cplusplus
}  // extern "C"
#endif
