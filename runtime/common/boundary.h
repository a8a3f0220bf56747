// The extern "C" boundary: turns internal exceptions into a status plus the
// calling thread's error detail (axon_last_error_message).
#pragma once

#include <new>
#include <system_error>

#include "axon/status.h"
#include "driver_error.h"

namespace axon::common {

// Stores "[function] message" as this thread's error detail. Never throws.
void record_failure(const char* function, const char* message) noexcept;

// This thread's detail (axon_last_error_message): "" until a call fails.
const char* last_error_message() noexcept;

// Runs `body` (which returns AXON_SUCCESS or AXON_ERROR_NOT_READY, and throws
// for every failure) so that nothing escapes across the C boundary.
template <typename Body>
axon_status guarded_call(const char* function, Body&& body) noexcept {
  try {
    return body();
  } catch (const DriverError& error) {
    record_failure(function, error.what());
    return error.status();
  } catch (const std::bad_alloc&) {
    record_failure(function, "out of host memory while executing the call");
    return AXON_ERROR_OUT_OF_MEMORY;
  } catch (const std::system_error& error) {
    record_failure(function, describe("host system error: ", error.what()).c_str());
    return AXON_ERROR_SYSTEM;
  } catch (const std::exception& error) {
    record_failure(function, describe("unexpected internal error: ", error.what()).c_str());
    return AXON_ERROR_SYSTEM;
  } catch (...) {
    record_failure(function, "unexpected internal error of unknown type");
    return AXON_ERROR_SYSTEM;
  }
}

// Throws AXON_ERROR_INVALID_VALUE naming the null output argument.
template <typename Pointer>
void require_output(Pointer* output, const char* argument_name) {
  if (output == nullptr) {
    fail(AXON_ERROR_INVALID_VALUE, "expected a non-null output pointer `", argument_name, "`, got null");
  }
}

}  // namespace axon::common
