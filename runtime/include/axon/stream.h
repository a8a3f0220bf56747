// Streams: in-order queues of work executed asynchronously by the device.
//
// Work queued on one stream runs in submission order; work on different
// streams may run in any order unless ordered with events
// (axon_stream_wait_event). Each device has a default stream, which exists
// for the driver's lifetime and cannot be destroyed.
//
// When several streams of a device have work ready, the one with the most
// urgent (numerically smallest) priority runs first.
//
// Errors: a task that fails does not stop its stream; the failure is kept as
// the stream's pending error and returned (once) by the next
// axon_stream_synchronize / axon_stream_query / axon_device_synchronize /
// axon_memory_copy, as AXON_ERROR_TASK_FAILED whose detail names the stream,
// the status the task returned and its message; a task that named its kind of
// failure (AXON_ERROR_TASK_OUT_OF_RANGE and the others in status.h) has that
// status reported instead of AXON_ERROR_TASK_FAILED. Only the first failure
// since the last report is kept.
//
// Launch blocking: when the driver runs in blocking mode (emulated driver:
// AXON_LAUNCH_BLOCKING=1) every launch, copy and set waits for its completion
// and returns the task's own failure directly (AXON_ERROR_TASK_FAILED, or the
// kind the task named, with that task's detail) instead of leaving it pending.
//
// Blocking calls (synchronize, blocking copies, shutdown) made from inside a
// running task would deadlock the device; they fail with
// AXON_ERROR_INVALID_VALUE instead.
//
// Thread-safety: every call is thread-safe; any thread may submit to any
// stream.
#pragma once

#include <stdint.h>

#include "axon/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct axon_stream_object* axon_stream;

// Room for a task's failure message, including the terminating NUL.
#define AXON_TASK_MESSAGE_CAPACITY 1024

// A host function: host code run in stream order (CUDA's cudaLaunchHostFunc).
// The driver calls `run` once every earlier item of the stream has finished
// and runs nothing later on the stream until it returns. `run` returns
// AXON_SUCCESS, or a failure status after writing a NUL-terminated message
// (at most AXON_TASK_MESSAGE_CAPACITY bytes) into `message`; a failure is
// reported like any failed device work (see "Errors" above).
// `release` (may be null) is called exactly once after `run`, on any thread,
// and also when the function is discarded without running (shutdown, or a
// launch that fails).
//
// Device programs are not host functions: they are executables
// (axon/executable.h). Host functions are an optional slot
// (AXON_CAPABILITY_HOST_FUNCTIONS); whether `run` may dereference device
// memory through axon_memory_host_view is a separate capability
// (AXON_CAPABILITY_HOST_ADDRESSABLE_MEMORY).
typedef struct axon_host_function {
  axon_status (*run)(void* user_data, char* message);
  void (*release)(void* user_data);
  void* user_data;
} axon_host_function;

// Range of valid priorities: *most_urgent <= priority <= *least_urgent.
// 0 is the default priority and always valid.
axon_status axon_stream_priority_range(int* least_urgent, int* most_urgent);

// Creates a stream on `device`. Out-of-range priorities are clamped.
axon_status axon_stream_create(int device, int priority, axon_stream* stream);

// Waits for the stream's pending work, then destroys it. Refuses the default
// stream with AXON_ERROR_INVALID_HANDLE. A pending task failure is not lost:
// the next axon_device_synchronize reports it.
axon_status axon_stream_destroy(axon_stream stream);

// The device's default stream (never fails for a valid device).
axon_status axon_stream_get_default(int device, axon_stream* stream);

axon_status axon_stream_get_device(axon_stream stream, int* device);
axon_status axon_stream_get_priority(axon_stream stream, int* priority);

// Queues host function `task` after all work previously queued on `stream`.
// Ownership of task.user_data passes to the driver, which calls task.release
// exactly once, even when this call fails. A driver without host functions
// returns AXON_ERROR_NOT_SUPPORTED (and still releases).
axon_status axon_stream_launch_host_function(axon_stream stream, axon_host_function task);

// AXON_SUCCESS if all queued work has finished, AXON_ERROR_NOT_READY if not,
// or the stream's pending error.
axon_status axon_stream_query(axon_stream stream);

// Blocks until all work queued on the stream so far has finished.
axon_status axon_stream_synchronize(axon_stream stream);

// How many items (launches, copies, sets, event records and waits) have been
// queued on the stream since it was created, finished or not. A caller that
// reads it right before and right after queuing an item, and finds it grew by
// one, knows that item's position; finding it unchanged later, it knows
// nothing was queued after that item (host code uses this to extend work it
// already queued, see csrc/host_execution/foreach_chains.h).
axon_status axon_stream_get_submission_count(axon_stream stream, uint64_t* count);

// Runs host function `task` on the calling thread, before returning, if every
// item queued on `stream`'s device has finished (so the device would start a
// launch at once); nothing queued on the device (by any thread) starts until
// it returns. Otherwise it returns AXON_ERROR_NOT_READY without running it, as
// it also does while activity is being recorded (axon/activity.h), so that
// every kernel of a recording gets its record.
// Returns AXON_SUCCESS when `run` did, or the status `run` failed with (its
// message becomes the call's detail): the failure is the caller's, not the
// stream's pending error. `release` is not called; the caller keeps
// `user_data`. `run` must be short and must not call the driver (it holds the
// stream). For host code too small to be worth handing to the device: queuing
// it costs more than running it (csrc/host_execution/inline_kernels.h).
// A driver without it returns AXON_ERROR_NOT_SUPPORTED.
axon_status axon_stream_run_host_function_if_idle(axon_stream stream, axon_host_function task);

#ifdef __cplusplus
}  // extern "C"
#endif
