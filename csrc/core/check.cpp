#include "core/check.h"

#include <cstring>
#include <string>

namespace axon {

void throw_status(axon_status status, const char* context) {
  std::string message = std::string("[axon] ") + context + " failed (" +
      axon_status_name(status) + ")";
  const char* detail = axon_last_error_message();
  if (detail != nullptr && detail[0] != '\0') {
    message += ": ";
    message += detail;
  }
  if (status == AXON_ERROR_TASK_FAILED) {
    // A kernel's own error, tagged with its Python type by stream_launch.cpp.
    const bool tagged = detail != nullptr;
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
