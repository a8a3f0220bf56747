#include "pjrt_client.h"

#include <functional>
#include <stdexcept>
#include <utility>

namespace axon::pjrt {
PjrtClient::PjrtClient(const std::string& path, std::optional<int> cpu_device_count) : api_(path) {
  ClientCreateArgs create{};
  create.struct_size = AXON_PJRT_RECORD_SIZE(ClientCreateArgs, kv_try_get_user_arg);
  static const char kDeviceCountOption[] = "cpu_device_count";
  NamedValue device_count{AXON_PJRT_RECORD_SIZE(NamedValue, value_size),
                          nullptr,
                          kDeviceCountOption,
                          sizeof(kDeviceCountOption) - 1,
                          kNamedInt64,
                          cpu_device_count.value_or(0),
                          1};
  if (cpu_device_count) {
    create.create_options = &device_count;
    create.num_options = 1;
    try {
      api_.call(kClientCreate, &create, "creating the PJRT client");
    } catch (const PjrtError&) {
      // Not a CPU plugin (the option is unknown to it): take its devices as they are.
      create.create_options = nullptr;
      create.num_options = 0;
    }
  }
  if (create.client == nullptr) api_.call(kClientCreate, &create, "creating the PJRT client");
  client_ = create.client;
  ClientAddressableDevicesArgs devices{AXON_PJRT_RECORD_SIZE(ClientAddressableDevicesArgs, num_devices), nullptr,
                                       client_, nullptr, 0};
  api_.call(kClientAddressableDevices, &devices, "listing the PJRT client's devices");
  if (devices.num_devices == 0) throw PjrtError(path + ": the PJRT client has no devices", -1);
  devices_.assign(devices.devices, devices.devices + devices.num_devices);
}

PjrtClient::~PjrtClient() {
  ClientArgs destroy{AXON_PJRT_RECORD_SIZE(ClientArgs, client), nullptr, client_};
  try {
    api_.call(kClientDestroy, &destroy, "PJRT_Client_Destroy");
  } catch (...) {
  }
}

std::string PjrtClient::api_version() const { return api_.version(); }

std::shared_ptr<CompiledProgram> PjrtClient::compile(const std::string& module_text, bool portable) {
  std::string code = module_text;
  static const char kFormat[] = "mlir";
  Program program{
      AXON_PJRT_RECORD_SIZE(Program, format_size), nullptr, code.data(), code.size(), kFormat, sizeof(kFormat) - 1};
  ClientCompileArgs compile{AXON_PJRT_RECORD_SIZE(ClientCompileArgs, executable),
                            nullptr,
                            client_,
                            &program,
                            portable ? kPortableCompileOptions : kCompileOptions,
                            portable ? sizeof(kPortableCompileOptions) : sizeof(kCompileOptions),
                            nullptr};
  api_.call(kClientCompile, &compile, "compiling the StableHLO module");
  return adopt(compile.executable);
}

std::shared_ptr<CompiledProgram> PjrtClient::adopt(LoadedExecutable* executable) {
  // Owned from here: destroyed with the CompiledProgram, also if counting its results fails.
  auto compiled = std::make_shared<CompiledProgram>(*this, executable, 0);
  Executable* description = executable_of(*compiled);
  ExecutableNumOutputsArgs outputs{AXON_PJRT_RECORD_SIZE(ExecutableNumOutputsArgs, num_outputs), nullptr, description,
                                   0};
  std::string failure;
  try {
    api_.call(kExecutableNumOutputs, &outputs, "PJRT_Executable_NumOutputs");
  } catch (const std::exception& error) {
    failure = error.what();
  }
  destroy_executable(description);
  if (!failure.empty()) throw std::runtime_error(failure);
  compiled->set_output_count(outputs.num_outputs);
  return compiled;
}

Executable* PjrtClient::executable_of(const CompiledProgram& program) const {
  LoadedExecutableGetExecutableArgs get{AXON_PJRT_RECORD_SIZE(LoadedExecutableGetExecutableArgs, executable), nullptr,
                                        program.executable(), nullptr};
  api_.call(kLoadedExecutableGetExecutable, &get, "PJRT_LoadedExecutable_GetExecutable");
  return get.executable;
}

void PjrtClient::destroy_executable(Executable* executable) const {
  ExecutableArgs destroy{AXON_PJRT_RECORD_SIZE(ExecutableArgs, executable), nullptr, executable};
  api_.call(kExecutableDestroy, &destroy, "PJRT_Executable_Destroy");
}

std::string PjrtClient::serialize(const CompiledProgram& program) const {
  Executable* description = executable_of(program);
  ExecutableSerializeArgs serialize{};
  serialize.struct_size = AXON_PJRT_RECORD_SIZE(ExecutableSerializeArgs, serialized_executable_deleter);
  serialize.executable = description;
  try {
    api_.call(kExecutableSerialize, &serialize, "PJRT_Executable_Serialize");
  } catch (...) {
    destroy_executable(description);
    throw;
  }
  std::string bytes(serialize.serialized_bytes, serialize.serialized_bytes_size);
  if (serialize.serialized_executable_deleter != nullptr) {
    serialize.serialized_executable_deleter(serialize.serialized_executable);
  }
  destroy_executable(description);
  return bytes;
}

std::shared_ptr<CompiledProgram> PjrtClient::deserialize(const std::string& bytes) {
  ExecutableDeserializeAndLoadArgs load{};
  load.struct_size = AXON_PJRT_RECORD_SIZE(ExecutableDeserializeAndLoadArgs, overridden_compile_options_size);
  load.client = client_;
  load.serialized_executable = bytes.data();
  load.serialized_executable_size = bytes.size();
  api_.call(kExecutableDeserializeAndLoad, &load, "loading a serialized executable");
  return adopt(load.loaded_executable);
}

CompiledProgram::~CompiledProgram() {
  if (executable_ == nullptr) return;
  LoadedExecutableArgs destroy{AXON_PJRT_RECORD_SIZE(LoadedExecutableArgs, executable), nullptr, executable_};
  try {
    client_.api_.call(kLoadedExecutableDestroy, &destroy, "PJRT_LoadedExecutable_Destroy");
  } catch (...) {
  }
}

void PjrtClient::run(const CompiledProgram& program, const std::vector<HostArray>& inputs,
                     const std::vector<HostArray>& outputs) {
  if (outputs.size() != program.output_count()) {
    throw std::runtime_error("the program has " + std::to_string(program.output_count()) + " results, got " +
                             std::to_string(outputs.size()) + " output arrays");
  }
  std::vector<Buffer*> arguments(inputs.size(), nullptr);
  std::vector<Buffer*> results(outputs.size(), nullptr);
  // Buffers and their host-buffer events are released on every path (zero-copy
  // inputs signal "done with the host bytes" once their buffer is destroyed).
  std::vector<Event*> host_buffer_events;
  struct Cleanup {
    const PjrtClient& client;
    std::vector<Buffer*>& arguments;
    std::vector<Buffer*>& results;
    std::vector<Event*>& events;
    ~Cleanup() {
      for (std::vector<Buffer*>* buffers : {&results, &arguments}) {
        for (Buffer* buffer : *buffers) release([&] { client.api_.destroy_buffer(buffer); });
      }
      for (Event* event : events) release([&] { client.api_.destroy_event(event); });
    }
    static void release(const std::function<void()>& destroy) {
      try {
        destroy();
      } catch (...) {  // nothing to report to while unwinding or after the results are out
      }
    }
  } cleanup{*this, arguments, results, host_buffer_events};
  for (size_t i = 0; i < inputs.size(); ++i) {
    const HostArray& input = inputs[i];
    host_buffer_events.push_back(nullptr);
    arguments[i] = from_host(devices_[0], input.data, input.type, input.dims, kImmutableZeroCopy,
                             &host_buffer_events.back(), "PJRT_Client_BufferFromHostBuffer");
  }
  if (program.results_in_place()) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      arguments.push_back(result_argument(outputs[i], shares_memory(i, inputs, outputs), host_buffer_events));
    }
  }
  // Compiled for device 0 (not portable), so no execute_device; arguments
  // may be donated.
  execute_and_wait(program, nullptr, arguments, /*keep_arguments=*/false, results);
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].bytes == 0) continue;
    if (program.results_in_place() && address_of(results[i]) == reinterpret_cast<uintptr_t>(outputs[i].data)) {
      continue;  // written in place
    }
    BufferCopyRawToHostArgs copy{AXON_PJRT_RECORD_SIZE(BufferCopyRawToHostArgs, event),
                                 nullptr,
                                 results[i],
                                 outputs[i].data,
                                 0,
                                 static_cast<int64_t>(outputs[i].bytes),
                                 nullptr};
    api_.call(kBufferCopyRawToHost, &copy, "copying a result out");
    api_.await_event(copy.event, "copying a result out");
  }
}

namespace {

bool overlap(const HostArray& a, const HostArray& b) {
  const auto* a_begin = static_cast<const char*>(a.data);
  const auto* b_begin = static_cast<const char*>(b.data);
  return a.bytes > 0 && b.bytes > 0 && a_begin < b_begin + b.bytes && b_begin < a_begin + a.bytes;
}

}  // namespace

bool PjrtClient::shares_memory(size_t output, const std::vector<HostArray>& inputs,
                               const std::vector<HostArray>& outputs) {
  for (const HostArray& input : inputs) {
    if (overlap(outputs[output], input)) return true;
  }
  for (size_t other = 0; other < outputs.size(); ++other) {
    if (other != output && overlap(outputs[output], outputs[other])) return true;
  }
  return false;
}

Buffer* PjrtClient::result_argument(const HostArray& output, bool shares_memory,
                                    std::vector<Event*>& host_buffer_events) const {
  if (output.bytes == 0 || shares_memory || reinterpret_cast<uintptr_t>(output.data) % 64 != 0) {
    return uninitialized(devices_[0], output.type, output.dims, "allocating a result's buffer");
  }
  host_buffer_events.push_back(nullptr);
  return from_host(devices_[0], output.data, output.type, output.dims, kMutableZeroCopy, &host_buffer_events.back(),
                   "binding a result's memory");
}

uintptr_t PjrtClient::address_of(Buffer* buffer) const {
  BufferUnsafePointerArgs pointer{AXON_PJRT_RECORD_SIZE(BufferUnsafePointerArgs, pointer), nullptr, buffer, 0};
  api_.call(kBufferUnsafePointer, &pointer, "reading a result's address");
  return pointer.pointer;
}

}  // namespace axon::pjrt
