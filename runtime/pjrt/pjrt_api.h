// A loaded PJRT plugin: its function table, checked at load, and one way to
// call it that turns a PJRT_Error into an exception.
//
// Shared by the emulated driver's StableHLO executables (pjrt_client.h) and the
// PJRT driver (runtime/pjrt_driver). Thread-safe: PJRT calls may be made from
// any thread.
#pragma once

#include <stdexcept>
#include <string>

#include "pjrt_abi.h"

namespace axon::pjrt {

// A failed PJRT call: the plugin's message (prefixed with what was being
// done) and its PJRT_Error_Code (an ErrorCode; -1 for a failure of loading).
class PjrtError : public std::runtime_error {
 public:
  PjrtError(const std::string& message, int code) : std::runtime_error(message), code_(code) {}
  int code() const noexcept { return code_; }

 private:
  int code_;
};

class PjrtApi {
 public:
  // Loads the plugin library at `path` (dlopen; it stays loaded for the
  // process's lifetime), checks its table and initializes it. Throws
  // PjrtError (code -1) saying what is wrong: no such file, not a PJRT
  // plugin, a PJRT C API major version other than 0, a table too short for
  // the calls Axon makes (kNewestSlotUsed), or an initialization failure.
  explicit PjrtApi(const std::string& path);
  PjrtApi(const PjrtApi&) = delete;
  PjrtApi& operator=(const PjrtApi&) = delete;

  // Calls `slot` with `args` (whose struct_size the caller set). Throws
  // PjrtError "<what>: <plugin message>" when the plugin returns an error.
  template <typename Args>
  void call(Slot slot, Args* args, const char* what) const {
    call_slot(slot, static_cast<void*>(args), what);
  }

  // "0.106": the plugin's PJRT C API version.
  std::string version() const;
  const std::string& path() const { return path_; }

  // Helpers for the records every user needs. Null is a no-op; destroy_* never throw.
  void await_event(Event* event, const char* what) const;  // waits, destroys, throws the event's error
  void destroy_event(Event* event) const noexcept;
  void destroy_buffer(Buffer* buffer) const noexcept;

 private:
  void call_slot(Slot slot, void* args, const char* what) const;

  std::string path_;
  void* library_ = nullptr;
  const ApiHeader* api_ = nullptr;
};

}  // namespace axon::pjrt
