// Events: markers in a stream's work, used to wait, order and time.
//
// An event is recorded on a stream; it completes when the stream reaches it.
// Recording again moves the marker: queries, waits and timings then refer to
// the newest recording, while earlier axon_stream_wait_event calls keep
// waiting for the recording that was current when they were made. An event
// never recorded counts as complete (as in CUDA).
//
// Thread-safety: every call is thread-safe.
#pragma once

#include "axon/status.h"
#include "axon/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct axon_event_object* axon_event;

typedef enum axon_event_flags {
  AXON_EVENT_DEFAULT = 0,
  // Record a completion timestamp, so axon_event_elapsed_time can be used.
  AXON_EVENT_TIMING = 1,
} axon_event_flags;

axon_status axon_event_create(unsigned flags, axon_event* event);

// Destroying an event with pending recordings is allowed: streams waiting on
// it still wait for those recordings.
axon_status axon_event_destroy(axon_event event);

// Queues the marker on `stream`.
axon_status axon_event_record(axon_event event, axon_stream stream);

// AXON_SUCCESS if the newest recording completed (or none was made),
// AXON_ERROR_NOT_READY otherwise.
axon_status axon_event_query(axon_event event);

// Blocks until the newest recording has completed.
axon_status axon_event_synchronize(axon_event event);

// Makes all work queued on `stream` after this call wait until the event's
// current recording completes. Returns at once; works across devices.
axon_status axon_stream_wait_event(axon_stream stream, axon_event event);

// Milliseconds between the completion of `start` and of `end`. Both must have
// been created with AXON_EVENT_TIMING and recorded; returns
// AXON_ERROR_NOT_READY if either has not completed yet and
// AXON_ERROR_INVALID_EVENT_STATE if either lacks timing or a recording.
axon_status axon_event_elapsed_time(axon_event start, axon_event end, float* milliseconds);

// The device of the stream the event was last recorded on (-1 if never).
axon_status axon_event_get_device(axon_event event, int* device);

#ifdef __cplusplus
}  // extern "C"
#endif
