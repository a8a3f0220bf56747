// Argument checks and the image copy-out that every driver's executable
// calls make the same way (axon/executable.h).
#pragma once

#include <cstddef>
#include <string>

#include "axon/executable.h"
#include "scheduler.h"

namespace axon::common {

// The first checks of axon_stream_launch_executable, in this order: the
// stream is live (AXON_ERROR_INVALID_HANDLE otherwise) and belongs to
// `executable_device` (AXON_ERROR_INVALID_HANDLE), and an entry point is named
// (AXON_ERROR_INVALID_VALUE).
void require_launch_target(Scheduler& scheduler, axon_stream stream, int executable_device, const char* entry_point);

// Throws AXON_ERROR_INVALID_VALUE for a null bindings array with bindings to
// read from it.
void require_bindings(const axon_binding* bindings, std::size_t binding_count);

// axon_executable_serialize's answer: the image's size in *image_bytes, and,
// unless `image` is null (a size query), the image itself; throws
// AXON_ERROR_INVALID_VALUE when `capacity` is too small.
void copy_image_out(const std::string& bytes, void* image, std::size_t capacity, std::size_t* image_bytes);

}  // namespace axon::common
