// Status names and the per-thread error detail.

#include <string>

#include "axon/status.h"
#include "boundary.h"
#include "entry_points.h"

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

namespace axon::emulated::entry_points {

const char* axon_last_error_message(void) { return axon::emulated::last_error_message.c_str(); }

}  // namespace axon::emulated::entry_points
