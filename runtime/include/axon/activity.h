// Activity records: when the device ran each piece of queued work, on which
// stream, and which host call queued it. This is what a profiler shows on the
// device's rows (CUDA's CUPTI activity API and PJRT's profiler extension play
// this part for their chips).
//
// Recording: between axon_activity_start and axon_activity_stop, every launch,
// copy and set the driver queues is marked; when marked work finishes, the
// driver keeps one record of it. Work queued before start is not recorded,
// work queued before stop is recorded even if it runs after stop. Records wait
// in the driver until axon_activity_collect takes them. Each start begins a
// new recording: records not collected by then are discarded, and work marked
// in an earlier recording is not recorded when it finishes later, so one
// recording's records never show up in the next.
//
// Correlation: the layer above tags its own calls (a profiler gives each host
// operator an id). axon_activity_set_correlation sets the calling thread's tag;
// every record carries the tag of the thread that queued the work, at the time
// it queued it. axon_activity_set_label likewise names the work the thread
// queues next (host functions have no name of their own).
//
// Times are nanoseconds since the Unix epoch on the host's realtime clock
// (CLOCK_REALTIME), so records line up with the host's own trace. A driver
// whose device keeps its own clock converts.
//
// Optional slot: a driver that cannot time its work answers every call here
// with AXON_ERROR_NOT_SUPPORTED; the layer above then shows no device rows.
//
// Thread-safety: every call is thread-safe. The correlation tag and the label
// belong to the calling thread.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "axon/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum axon_activity_kind {
  AXON_ACTIVITY_HOST_FUNCTION = 1,  // axon_stream_launch_host_function
  AXON_ACTIVITY_EXECUTABLE = 2,     // axon_stream_launch_executable
  AXON_ACTIVITY_COPY_HOST_TO_DEVICE = 3,
  AXON_ACTIVITY_COPY_DEVICE_TO_HOST = 4,
  AXON_ACTIVITY_COPY_DEVICE_TO_DEVICE = 5,
  AXON_ACTIVITY_COPY_HOST_TO_HOST = 6,
  AXON_ACTIVITY_SET = 7,  // axon_memory_set_async
} axon_activity_kind;

// Room for a record's name, including the terminating NUL; longer names are cut.
#define AXON_ACTIVITY_NAME_CAPACITY 96

// A record. Fields are only ever appended: a caller says how large its records
// are (axon_activity_collect's `record_size`), and a driver writes no more than
// that of each, zero-filling what the caller has beyond the driver's own.
typedef struct axon_activity_record {
  axon_activity_kind kind;
  int device;
  int stream_number;     // per device, as in the driver's messages: 0 is the default stream
  axon_status status;    // what the work returned (a failure is also reported as stream.h says)
  uint64_t correlation;  // the queueing thread's tag (axon_activity_set_correlation), 0 if none
  int64_t start_ns;      // when the device began the work
  int64_t end_ns;        // when it finished
  uint64_t bytes;        // copies and sets: bytes moved or written; 0 otherwise
  // The queueing thread's label if it had one, else the driver's name for the
  // work (an executable's entry point), else empty.
  char name[AXON_ACTIVITY_NAME_CAPACITY];
} axon_activity_record;

// Starts a new recording (see Recording). AXON_ERROR_INVALID_VALUE if already recording.
axon_status axon_activity_start(void);

// Stops marking queued work; what is already marked is still recorded when it
// finishes. AXON_ERROR_INVALID_VALUE if not recording.
axon_status axon_activity_stop(void);

// The calling thread's correlation tag from now on (0 clears it).
axon_status axon_activity_set_correlation(uint64_t correlation);

// The calling thread's label from now on (copied; null or "" clears it).
axon_status axon_activity_set_label(const char* label);

// Moves up to `capacity` finished records, oldest first, into `records` (an
// array of `record_size`-byte records: sizeof(axon_activity_record) as the
// caller was built) and sets *count to how many. Call again while
// *count == capacity. *dropped (optional, may be null) receives how many
// records the driver discarded since the last collect because too many were
// waiting (the driver keeps at least 65536). A `record_size` smaller than the
// first version of the record (through `name`) is AXON_ERROR_INVALID_VALUE.
axon_status axon_activity_collect(void* records, size_t record_size, size_t capacity, size_t* count, size_t* dropped);

#ifdef __cplusplus
}  // extern "C"
#endif
