// Internal failure type shared by Axon's drivers (the emulated and PJRT ones).
//
// Inside the driver a failure travels as a DriverError exception, which keeps
// the happy path free of status plumbing. Every extern "C" entry point runs its
// body through guarded_call() (boundary.h), so no exception ever crosses the
// driver boundary.
#pragma once

#include <exception>
#include <sstream>
#include <string>
#include <utility>

#include "axon/status.h"

namespace axon::common {

class DriverError : public std::exception {
 public:
  DriverError(axon_status status, std::string message) : status_(status), message_(std::move(message)) {}

  axon_status status() const noexcept { return status_; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  axon_status status_;
  std::string message_;
};

// Concatenates anything streamable into one message.
template <typename... Parts>
std::string describe(const Parts&... parts) {
  std::ostringstream text;
  (text << ... << parts);
  return text.str();
}

template <typename... Parts>
[[noreturn]] void fail(axon_status status, const Parts&... parts) {
  throw DriverError(status, describe(parts...));
}

}  // namespace axon::common
