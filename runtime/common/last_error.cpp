// The per-thread error detail behind each driver's axon_last_error_message.

#include <string>

#include "boundary.h"

namespace axon::common {
namespace {

thread_local std::string last_error;

}  // namespace

void record_failure(const char* function, const char* message) noexcept {
  try {
    last_error.assign("[");
    last_error.append(function);
    last_error.append("] ");
    last_error.append(message);
  } catch (...) {
    // Building the message needs memory; when even that fails keep a fixed
    // detail rather than letting the failure escape.
    try {
      last_error.assign("(error detail lost: out of host memory)");
    } catch (...) {
    }
  }
}

const char* last_error_message() noexcept { return last_error.c_str(); }

}  // namespace axon::common
