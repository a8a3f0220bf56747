#include "core/check.h"

#include <cstring>
#include <string>

namespace axon {

namespace {

// The error of a kernel that failed while running asynchronously, with the
// failing kernel first: the call that reported it (`context`) only waited
// for the stream, so it comes last. The driver's detail reads
// "[...] task failed on <stream> with AXON_ERROR_TASK_FAILED: <kernel>: [Tag] <message>".
std::string describe_task_failure(const char* context, const std::string& detail) {
  static const std::string kSeparator = "with AXON_ERROR_TASK_FAILED: ";
  const size_t separator = detail.find(kSeparator);
  const size_t on = detail.find("task failed on ");
  if (separator == std::string::npos || on == std::string::npos || on > separator) {
    return std::string("[axon] ") + context + " failed (AXON_ERROR_TASK_FAILED): " + detail;
  }
  std::string kernel_error = detail.substr(separator + kSeparator.size());
  for (const char* tag : {"[IndexError] ", "[ValueError] ", "[TypeError] ", "[NotImplementedError] ",
                          "[LinAlgError] "}) {
    const size_t found = kernel_error.find(tag);
    if (found != std::string::npos) kernel_error.erase(found, std::strlen(tag));
  }
  const std::string stream = detail.substr(on + 15, separator - 1 - (on + 15));
  return kernel_error + "\n[axon] raised by that kernel while it ran asynchronously on " + stream +
      "; reported by the next call that waited for it (" + context +
      "). AXON_LAUNCH_BLOCKING=1 raises such errors at the call that queued the kernel.";
}

}  // namespace

void throw_status(axon_status status, const char* context) {
  const char* detail = axon_last_error_message();
  std::string message = std::string("[axon] ") + context + " failed (" + axon_status_name(status) + ")";
  if (detail != nullptr && detail[0] != '\0') {
    message += ": ";
    message += detail;
  }
  if (status == AXON_ERROR_TASK_FAILED) {
    // A kernel's own error, tagged with its Python type by stream_launch.cpp.
    const bool tagged = detail != nullptr;
    if (tagged) message = describe_task_failure(context, detail);
    TORCH_CHECK_INDEX(!(tagged && std::strstr(detail, "[IndexError] ")), message);
    TORCH_CHECK_VALUE(!(tagged && std::strstr(detail, "[ValueError] ")), message);
    TORCH_CHECK_TYPE(!(tagged && std::strstr(detail, "[TypeError] ")), message);
    TORCH_CHECK_NOT_IMPLEMENTED(!(tagged && std::strstr(detail, "[NotImplementedError] ")), message);
    TORCH_CHECK_LINALG(!(tagged && std::strstr(detail, "[LinAlgError] ")), message);
  }
  switch (status) {
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
