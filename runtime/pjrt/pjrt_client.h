// A PJRT plugin's client: its devices, compiled StableHLO, and device buffers.
//
// Two users: the emulated driver's "stablehlo-mlir" executables, whose device
// memory is host memory (run() reads and writes host arrays), and the PJRT
// driver (runtime/pjrt_driver), whose device memory is the plugin's buffers
// (allocate, upload, download, execute). Thread-safe: every call may be made
// from any thread, concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
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
  // `cpu_device_count`, when set, asks a CPU plugin for that many devices
  // (its create option "cpu_device_count"); a plugin that refuses the option
  // is created without it, with the devices it has.
  explicit PjrtClient(const std::string& path, std::optional<int> cpu_device_count = std::nullopt);
  ~PjrtClient();
  PjrtClient(const PjrtClient&) = delete;
  PjrtClient& operator=(const PjrtClient&) = delete;

  // Compiles StableHLO text. Throws std::runtime_error with the compiler's
  // message for a module it refuses.
  // `portable`: not bound to device 0; execute() runs it on any device.
  std::shared_ptr<CompiledProgram> compile(const std::string& module_text, bool portable = false);

  // The plugin's own serialization of `program` (valid only for this plugin
  // build), and the program back from it. Throw std::runtime_error on failure.
  std::string serialize(const CompiledProgram& program) const;
  std::shared_ptr<CompiledProgram> deserialize(const std::string& bytes);

  // Runs `program` on `inputs` (read in place where 64-byte aligned, copied
  // otherwise) with its results in `outputs`, waiting for all of it. A
  // program with results in place (set_results_in_place) gets each 64-byte
  // aligned output's bytes that overlap no other binding as the donated
  // argument its result aliases, so XLA writes the result there; any other
  // result is copied into its output after the run.
  // Throws std::runtime_error on failure.
  void run(const CompiledProgram& program, const std::vector<HostArray>& inputs, const std::vector<HostArray>& outputs);

  // "0.106": the plugin's PJRT C API version.
  std::string api_version() const;

  // ---- devices (the client's addressable devices, in the plugin's order) ----
  size_t device_count() const { return devices_.size(); }
  // "cpu cpu:0": the device's kind and its debug string.
  std::string device_description(size_t device) const;
  // The plugin's memory limit of the device, when it reports one.
  std::optional<int64_t> device_memory_limit(size_t device) const;

  // ---- buffers: owned by the caller, released with destroy() ----
  // `bytes` of uninitialized device memory as a u8 array.
  Buffer* allocate(size_t device, size_t bytes);
  // A new buffer holding a copy of the host array (read during the call).
  Buffer* upload(size_t device, const void* data, BufferType type, const std::vector<int64_t>& dims);
  // Copies `bytes` from byte `offset` of the buffer into `destination`; waits.
  void download(Buffer* buffer, size_t offset, size_t bytes, void* destination);
  void destroy(Buffer* buffer) const noexcept { api_.destroy_buffer(buffer); }

  // Runs a portable `program` on `device` with `arguments` (not consumed) and
  // waits for it; returns its results, owned by the caller.
  std::vector<Buffer*> execute(const CompiledProgram& program, size_t device, const std::vector<Buffer*>& arguments);

 private:
  friend class CompiledProgram;
  std::shared_ptr<CompiledProgram> adopt(LoadedExecutable* executable);
  Executable* executable_of(const CompiledProgram& program) const;  // the caller destroys it
  void destroy_executable(Executable* executable) const;
  // The argument a result in place is written to: `output`'s own bytes when
  // they are 64-byte aligned (what the plugin aliases) and share no memory
  // with another binding (XLA may write a result before it has read every
  // argument), else a new buffer the result is copied out of.
  Buffer* result_argument(const HostArray& output, bool shares_memory, std::vector<Event*>& host_buffer_events) const;
  static bool shares_memory(size_t output, const std::vector<HostArray>& inputs, const std::vector<HostArray>& outputs);
  // An uninitialized buffer of `type` and `dims` on `device`.
  Buffer* uninitialized(Device* device, BufferType type, const std::vector<int64_t>& dims, const char* what) const;
  // A buffer on `device` of the host bytes at `data` (copied, or aliased
  // under a zero-copy `semantics`); `*done_with_host_buffer` receives the
  // event that says the plugin is done with the bytes (the caller destroys it).
  Buffer* from_host(Device* device, const void* data, BufferType type, const std::vector<int64_t>& dims,
                    HostBufferSemantics semantics, Event** done_with_host_buffer, const char* what) const;
  // The host address of a host-resident buffer's bytes.
  uintptr_t address_of(Buffer* buffer) const;
  // One PJRT Execute of `program` over `arguments`, waited for; what run()
  // and execute() share. `device`: where a portable program runs, or null for
  // one compiled for a device. `keep_arguments`: none is donated to the
  // program. The results land in `results` (sized to the program's outputs),
  // which the caller destroys, also when this throws.
  void execute_and_wait(const CompiledProgram& program, Device* device, const std::vector<Buffer*>& arguments,
                        bool keep_arguments, std::vector<Buffer*>& results) const;

  PjrtApi api_;
  Client* client_ = nullptr;
  std::vector<Device*> devices_;
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
  // Whether the module was compiled from with_results_in_place's text: after
  // its own arguments, @main takes one per result, aliased to that result.
  bool results_in_place() const { return results_in_place_; }
  void set_results_in_place(bool in_place) { results_in_place_ = in_place; }
  LoadedExecutable* executable() const { return executable_; }

 private:
  const PjrtClient& client_;
  LoadedExecutable* executable_;
  size_t outputs_;
  bool results_in_place_ = false;
};

}  // namespace axon::pjrt
