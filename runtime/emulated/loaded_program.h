// A program an executable holds, in one of the formats the emulated driver
// loads (executable.cpp): native host code, or StableHLO run by XLA's CPU
// compiler. Launches reach it in two steps: at the call, `entry` checks the
// launch and names what to run; on the device's worker, `run` runs it over the
// bindings' host views.
#pragma once

#include <cstddef>
#include <string>

#include "axon/formats/host_shared_object.h"
#include "axon/stream.h"

namespace axon::emulated {

class LoadedProgram {
 public:
  virtual ~LoadedProgram() = default;

  // What `run` should run for entry point `name` with this many bindings and
  // constant bytes; throws DriverError(AXON_ERROR_INVALID_VALUE) for a launch
  // the program cannot take (unknown entry point, wrong binding count).
  virtual const void* entry(const char* name, std::size_t binding_count, std::size_t constant_bytes) const = 0;

  // Runs `entry` on the worker. Returns true, or false after writing a
  // NUL-terminated message of at most AXON_TASK_MESSAGE_CAPACITY bytes.
  virtual bool run(const void* entry, const axon_host_dispatch& dispatch, char* message) const = 0;

  // The program as an image the driver loads again without compiling, and
  // that image's format; throws DriverError(AXON_ERROR_NOT_SUPPORTED) for a
  // program that has no such form (native code is its own image).
  virtual std::string serialize(const char** format) const;
};

}  // namespace axon::emulated
