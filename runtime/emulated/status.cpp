// Status names and the per-thread error detail.

#include <string>

#include "axon/status.h"
#include "boundary.h"

namespace axon::emulated {
namespace {

thread_local std::string last_error_message;

}  // namespace

void record_failure(const char* function, const char* message) noexcept {
  try {
    last_error_message.assign("[");
    last_error_message.append(function);
    last_error_message.append("] ");
    last_error_message.append(message);
  } catch (...) {
    // Building the message needs memory; when even that fails keep a fixed
    // detail rather than letting the failure escape.
    try {
      last_error_message.assign("(error detail lost: out of host memory)");
    } catch (...) {
    }
  }
}

}  // namespace axon::emulated

extern "C" const char* axon_status_name(axon_status status) {
  switch (status) {
    case AXON_SUCCESS: return "AXON_SUCCESS";
    case AXON_ERROR_INVALID_VALUE: return "AXON_ERROR_INVALID_VALUE";
    case AXON_ERROR_INVALID_DEVICE: return "AXON_ERROR_INVALID_DEVICE";
    case AXON_ERROR_INVALID_HANDLE: return "AXON_ERROR_INVALID_HANDLE";
    case AXON_ERROR_OUT_OF_MEMORY: return "AXON_ERROR_OUT_OF_MEMORY";
    case AXON_ERROR_INVALID_POINTER: return "AXON_ERROR_INVALID_POINTER";
    case AXON_ERROR_NOT_READY: return "AXON_ERROR_NOT_READY";
    case AXON_ERROR_TASK_FAILED: return "AXON_ERROR_TASK_FAILED";
    case AXON_ERROR_INVALID_EVENT_STATE: return "AXON_ERROR_INVALID_EVENT_STATE";
    case AXON_ERROR_SHUT_DOWN: return "AXON_ERROR_SHUT_DOWN";
    case AXON_ERROR_SYSTEM: return "AXON_ERROR_SYSTEM";
    case AXON_ERROR_NOT_SUPPORTED: return "AXON_ERROR_NOT_SUPPORTED";
  }
  return "AXON_ERROR_UNKNOWN_STATUS";
}

extern "C" const char* axon_last_error_message(void) {
  return axon::emulated::last_error_message.c_str();
}
