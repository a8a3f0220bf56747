// Queues host-side kernel bodies on an axon stream.
#pragma once

#include <functional>

#include "axon/stream.h"
#include "host_execution/device_memory_views.h"

namespace axon {

// Runs `body` on `stream` after the work already queued there. Exceptions it
// throws become the stream's pending error (reported by the next
// synchronize), or are raised here at once under AXON_LAUNCH_BLOCKING=1.
// `kernel_name` names the kernel in that error. The body runs with autograd
// and ADInplaceOrView dispatch disabled, as kernels do. What it captured is
// destroyed later on a queuing thread, not on the worker (why: see
// stream_launch.cpp), so a body that consumes a capture (callBoxed pops its
// stack) should consume a copy, letting the captured objects die with the launch.
void launch_on_stream(axon_stream stream, const char* kernel_name, std::function<void()> body);

// The same for a kernel over `aliases` (device_memory_views.h): where they
// view staging buffers, the bytes are staged in before `body` and the
// written bytes staged out after it, on the same stream.
void launch_on_stream(axon_stream stream, const char* kernel_name, HostAliases& aliases, std::function<void()> body);

}  // namespace axon
