// The driver's blocking waits, counted: whether a host thread is blocked on
// axon work right now.
#pragma once

#include "axon/device.h"
#include "axon/event.h"
#include "axon/memory.h"
#include "axon/stream.h"

namespace axon {

// axon_stream_synchronize, axon_event_synchronize and axon_device_synchronize,
// with the calling thread counted as waiting while they block. Program
// threads call these (a synchronize, a copy to the host, an allocator
// reclaiming memory); the runtime's own service threads (collectives) call
// the driver directly, since their waits say nothing about the program.
axon_status wait_for_stream(axon_stream stream);
axon_status wait_for_event(axon_event event);
axon_status wait_for_device(int device);

// axon_memory_copy (a copy queued on `stream`, then waited for), counted the
// same way: Tensor.item() reads its value back through it, and a training
// loop's `loss.item()` is where its program thread waits for a step's work.
axon_status copy_and_wait(void* dst, const void* src, size_t bytes, axon_stream stream);

// Whether some program thread is inside one of the waits above now.
//
// Why: on the emulated driver a device's worker runs host kernels on the
// host's cores, beside the program's own threads. While the program's thread
// is blocked, its core is free for the worker's OpenMP helpers; while it runs
// (queuing the next kernels), a helper competes with it, and the worker
// spins at libgomp's barriers for a helper the scheduler has not run
// (stream_launch.h, LaunchThreads).
bool host_thread_waiting();

}  // namespace axon
