// A PJRT plugin's client: compiles StableHLO and runs it on host memory.
//
// Used by the emulated driver's "stablehlo-mlir" executables (its device is
// the host, so PJRT's CPU plugin can read device memory in place). Thread-safe:
// compile and run may be called from any thread, concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pjrt_api.h"

namespace axon::pjrt {

// One array argument or result: host bytes, element type and dimensions.
struct HostArray {
  void* data = nullptr;
  BufferType type = kF32;
  std::vector<int64_t> dims;
  size_t bytes = 0;
};

class CompiledProgram;

class PjrtClient {
 public:
  // Loads the plugin library at `path` (exporting GetPjrtApi) and creates a
  // client. Throws PjrtError (a std::runtime_error) saying what failed.
  explicit PjrtClient(const std::string& path);
  ~PjrtClient();
  PjrtClient(const PjrtClient&) = delete;
  PjrtClient& operator=(const PjrtClient&) = delete;

  // Compiles StableHLO text. Throws std::runtime_error with the compiler's
  // message for a module it refuses.
  std::shared_ptr<CompiledProgram> compile(const std::string& module_text);

  // The plugin's own serialization of `program` (valid only for this plugin
  // build), and the program back from it. Throw std::runtime_error on failure.
  std::string serialize(const CompiledProgram& program) const;
  std::shared_ptr<CompiledProgram> deserialize(const std::string& bytes);

  // Runs `program` on `inputs` (read in place where 64-byte aligned, copied
  // otherwise) and copies its results into `outputs`, waiting for all of it.
  // Throws std::runtime_error on failure.
  void run(const CompiledProgram& program, const std::vector<HostArray>& inputs, const std::vector<HostArray>& outputs);

  // "0.106": the plugin's PJRT C API version.
  std::string api_version() const;

 private:
  friend class CompiledProgram;
  std::shared_ptr<CompiledProgram> adopt(LoadedExecutable* executable);
  Executable* executable_of(const CompiledProgram& program) const;  // the caller destroys it
  void destroy_executable(Executable* executable) const;

  PjrtApi api_;
  Client* client_ = nullptr;
  Device* device_ = nullptr;
};

// A compiled module; destroyed with its last reference.
class CompiledProgram {
 public:
  CompiledProgram(const PjrtClient& client, LoadedExecutable* executable, size_t outputs)
      : client_(client), executable_(executable), outputs_(outputs) {}
  ~CompiledProgram();
  CompiledProgram(const CompiledProgram&) = delete;
  CompiledProgram& operator=(const CompiledProgram&) = delete;

  size_t output_count() const { return outputs_; }
  void set_output_count(size_t outputs) { outputs_ = outputs; }
  LoadedExecutable* executable() const { return executable_; }

 private:
  const PjrtClient& client_;
  LoadedExecutable* executable_;
  size_t outputs_;
};

}  // namespace axon::pjrt
