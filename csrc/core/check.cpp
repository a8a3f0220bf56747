#include "core/check.h"

#include <string>

namespace axon {

namespace {

// The error of a kernel that failed while running asynchronously, with the
// failing kernel first: the call that reported it (`context`) only waited
// for the stream, so it comes last. The driver's detail reads
// "[...] task failed on <stream> with AXON_ERROR_TASK_<KIND>: <kernel>: <message>".
std::string describe_task_failure(const char* context, axon_status status, const std::string& detail) {
  const std::string separator = std::string(" with ") + axon_status_name(status) + ": ";
  const size_t at = detail.find(separator);
  const size_t on = detail.find("task failed on ");
  if (at == std::string::npos || on == std::string::npos || on > at) {
    return std::string("[axon] ") + context + " failed (" + axon_status_name(status) + "): " + detail;
  }
  const std::string kernel_error = detail.substr(at + separator.size());
  const std::string stream = detail.substr(on + 15, at - (on + 15));
  return kernel_error + "\n[axon] raised by that kernel while it ran asynchronously on " + stream +
         "; reported by the next call that waited for it (" + context +
         "). AXON_LAUNCH_BLOCKING=1 raises such errors at the call that queued the kernel.";
}

}  // namespace

void throw_status(axon_status status, const char* context) {
  const char* detail = axon_last_error_message();
  throw_status(status, context, detail == nullptr ? std::string() : std::string(detail));
}

void throw_status(axon_status status, const char* context, const std::string& detail) {
  std::string message = std::string("[axon] ") + context + " failed (" + axon_status_name(status) + ")";
  if (!detail.empty()) {
    message += ": ";
    message += detail;
  }
  if (axon_status_is_task_failure(status) && !detail.empty()) {
    // A kernel's own error, of the kind the kernel named (host_execution/stream_launch.cpp).
    message = describe_task_failure(context, status, detail);
  }
  switch (status) {
    case AXON_ERROR_TASK_OUT_OF_RANGE:
      TORCH_CHECK_INDEX(false, message);
    case AXON_ERROR_TASK_INVALID_ARGUMENT:
      TORCH_CHECK_VALUE(false, message);
    case AXON_ERROR_TASK_WRONG_TYPE:
      TORCH_CHECK_TYPE(false, message);
    case AXON_ERROR_TASK_UNSUPPORTED:
      TORCH_CHECK_NOT_IMPLEMENTED(false, message);
    case AXON_ERROR_TASK_NUMERICAL:
      TORCH_CHECK_LINALG(false, message);
    case AXON_ERROR_OUT_OF_MEMORY:
      TORCH_CHECK_WITH(OutOfMemoryError, false, message);
    case AXON_ERROR_INVALID_DEVICE:
      TORCH_CHECK_INDEX(false, message);
    case AXON_ERROR_INVALID_VALUE:
    case AXON_ERROR_INVALID_HANDLE:
    case AXON_ERROR_INVALID_POINTER:
    case AXON_ERROR_INVALID_EVENT_STATE:
      TORCH_CHECK_VALUE(false, message);
    case AXON_ERROR_NOT_SUPPORTED:
      TORCH_CHECK_NOT_IMPLEMENTED(false, message);
    default:
      TORCH_CHECK(false, message);
  }
}

}  // namespace axon
