// Status names: the text of axon_status_name (the loader's), also used by
// driver code, which cannot call the loader from inside a driver library.

#include "status_names.h"

namespace axon::common {

const char* status_name(axon_status status) {
  switch (status) {
    case AXON_SUCCESS:
      return "AXON_SUCCESS";
    case AXON_ERROR_INVALID_VALUE:
      return "AXON_ERROR_INVALID_VALUE";
    case AXON_ERROR_INVALID_DEVICE:
      return "AXON_ERROR_INVALID_DEVICE";
    case AXON_ERROR_INVALID_HANDLE:
      return "AXON_ERROR_INVALID_HANDLE";
    case AXON_ERROR_OUT_OF_MEMORY:
      return "AXON_ERROR_OUT_OF_MEMORY";
    case AXON_ERROR_INVALID_POINTER:
      return "AXON_ERROR_INVALID_POINTER";
    case AXON_ERROR_NOT_READY:
      return "AXON_ERROR_NOT_READY";
    case AXON_ERROR_TASK_FAILED:
      return "AXON_ERROR_TASK_FAILED";
    case AXON_ERROR_INVALID_EVENT_STATE:
      return "AXON_ERROR_INVALID_EVENT_STATE";
    case AXON_ERROR_SHUT_DOWN:
      return "AXON_ERROR_SHUT_DOWN";
    case AXON_ERROR_SYSTEM:
      return "AXON_ERROR_SYSTEM";
    case AXON_ERROR_NOT_SUPPORTED:
      return "AXON_ERROR_NOT_SUPPORTED";
    case AXON_ERROR_TASK_OUT_OF_RANGE:
      return "AXON_ERROR_TASK_OUT_OF_RANGE";
    case AXON_ERROR_TASK_INVALID_ARGUMENT:
      return "AXON_ERROR_TASK_INVALID_ARGUMENT";
    case AXON_ERROR_TASK_WRONG_TYPE:
      return "AXON_ERROR_TASK_WRONG_TYPE";
    case AXON_ERROR_TASK_UNSUPPORTED:
      return "AXON_ERROR_TASK_UNSUPPORTED";
    case AXON_ERROR_TASK_NUMERICAL:
      return "AXON_ERROR_TASK_NUMERICAL";
  }
  return "AXON_ERROR_UNKNOWN_STATUS";
}

}  // namespace axon::common
