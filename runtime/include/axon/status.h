// Status codes returned by every driver call.
//
// The driver never throws and never aborts the process: each fallible call
// returns an axon_status, and on failure leaves a human-readable detail for the
// calling thread in axon_last_error_message(). Layers above (the PyTorch
// integration) turn a status plus that detail into a Python exception.
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

typedef enum axon_status {
  AXON_SUCCESS = 0,
  // An argument is out of range or malformed (null pointer, bad flag, ...).
  AXON_ERROR_INVALID_VALUE = 1,
  // The device index is negative or not below axon_device_count().
  AXON_ERROR_INVALID_DEVICE = 2,
  // A stream or event handle is null, destroyed, or of the wrong device.
  AXON_ERROR_INVALID_HANDLE = 3,
  // The device (or pinned host pool) cannot satisfy an allocation.
  AXON_ERROR_OUT_OF_MEMORY = 4,
  // The pointer was not returned by this driver, or was already freed.
  AXON_ERROR_INVALID_POINTER = 5,
  // Work is still pending: returned by the *_query calls, not a failure.
  AXON_ERROR_NOT_READY = 6,
  // A task previously launched on the stream failed; the detail says which.
  AXON_ERROR_TASK_FAILED = 7,
  // Event timing requested on events created without timing, or not recorded.
  AXON_ERROR_INVALID_EVENT_STATE = 8,
  // axon_runtime_shutdown() has been called; the driver accepts no more work.
  AXON_ERROR_SHUT_DOWN = 9,
  // The driver could not obtain a host resource (thread, mapping, file).
  AXON_ERROR_SYSTEM = 10,
  // An optional driver capability this driver does not provide.
  AXON_ERROR_NOT_SUPPORTED = 11,
  // A task failed with a kind of failure its author named. A host function
  // (or executable) returns one of these instead of AXON_ERROR_TASK_FAILED,
  // and the driver reports that status, unchanged, where it would report
  // AXON_ERROR_TASK_FAILED; the layer above raises the matching exception.
  // An index or offset outside its range (IndexError):
  AXON_ERROR_TASK_OUT_OF_RANGE = 12,
  // An argument value the task refuses (ValueError):
  AXON_ERROR_TASK_INVALID_ARGUMENT = 13,
  // An argument of the wrong type or dtype (TypeError):
  AXON_ERROR_TASK_WRONG_TYPE = 14,
  // An operation the task does not implement for these inputs (NotImplementedError):
  AXON_ERROR_TASK_UNSUPPORTED = 15,
  // A numerical failure: a singular matrix, no convergence (LinAlgError):
  AXON_ERROR_TASK_NUMERICAL = 16,
} axon_status;

// Whether `status` reports a failed task: AXON_ERROR_TASK_FAILED or one of
// the named kinds above.
static inline int axon_status_is_task_failure(axon_status status) {
  return status == AXON_ERROR_TASK_FAILED ||
         (status >= AXON_ERROR_TASK_OUT_OF_RANGE && status <= AXON_ERROR_TASK_NUMERICAL);
}

// Stable, static name of a status, e.g. "AXON_ERROR_OUT_OF_MEMORY".
const char* axon_status_name(axon_status status);

// Detail of the most recent failed call made by this thread ("" if none).
// The pointer stays valid until this thread's next driver call.
const char* axon_last_error_message(void);

#ifdef __cplusplus
}  // extern "C"
#endif
