#include "pjrt_client.h"

#include <dlfcn.h>

#include <functional>
#include <stdexcept>
#include <utility>

namespace axon::pjrt {
namespace {

using Function = Error* (*)(void*);

// The error's message; destroys it.
std::string consume(const ApiHeader* api, Error* error) {
  auto slot = [&](Slot index) {
    return *reinterpret_cast<void* const*>(reinterpret_cast<const char*>(api) + sizeof(ApiHeader) + 8 * index);
  };
  ErrorMessageArgs message{AXON_PJRT_RECORD_SIZE(ErrorMessageArgs, message_size), nullptr, error, nullptr, 0};
  reinterpret_cast<void (*)(ErrorMessageArgs*)>(slot(kErrorMessage))(&message);
  std::string text(message.message != nullptr ? message.message : "(no message)", message.message_size);
  ErrorDestroyArgs destroy{AXON_PJRT_RECORD_SIZE(ErrorDestroyArgs, error), nullptr, error};
  reinterpret_cast<void (*)(ErrorDestroyArgs*)>(slot(kErrorDestroy))(&destroy);
  return text;
}

}  // namespace

template <typename Args>
void PjrtClient::call(Slot slot, Args* args, const char* what) const {
  const size_t offset = sizeof(ApiHeader) + 8 * static_cast<size_t>(slot);
  if (offset + sizeof(void*) > api_->struct_size) {
    throw std::runtime_error(std::string("the PJRT plugin has no ") + what + " (API too old)");
  }
  auto function = *reinterpret_cast<const Function*>(reinterpret_cast<const char*>(api_) + offset);
  if (function == nullptr) throw std::runtime_error(std::string("the PJRT plugin leaves ") + what + " empty");
  if (Error* error = function(args)) throw std::runtime_error(std::string(what) + ": " + consume(api_, error));
}

PjrtClient::PjrtClient(const std::string& path) {
  library_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);  // kept for the process's lifetime
  if (library_ == nullptr) {
    const char* why = dlerror();
    throw std::runtime_error("cannot load the PJRT plugin " + path + ": " + (why != nullptr ? why : "?"));
  }
  auto get_api = reinterpret_cast<const ApiHeader* (*)()>(dlsym(library_, "GetPjrtApi"));
  if (get_api == nullptr) throw std::runtime_error(path + " exports no GetPjrtApi (not a PJRT plugin)");
  api_ = get_api();
  if (api_ == nullptr || api_->version.major_version != 0) {
    throw std::runtime_error(path + ": expected PJRT C API major version 0");
  }
  PlainArgs initialize{AXON_PJRT_RECORD_SIZE(PlainArgs, extension_start), nullptr};
  call(kPluginInitialize, &initialize, "PJRT_Plugin_Initialize");
  ClientCreateArgs create{};
  create.struct_size = AXON_PJRT_RECORD_SIZE(ClientCreateArgs, kv_try_get_user_arg);
  call(kClientCreate, &create, "PJRT_Client_Create");
  client_ = create.client;
  ClientAddressableDevicesArgs devices{AXON_PJRT_RECORD_SIZE(ClientAddressableDevicesArgs, num_devices), nullptr,
                                       client_, nullptr, 0};
  call(kClientAddressableDevices, &devices, "PJRT_Client_AddressableDevices");
  if (devices.num_devices == 0) throw std::runtime_error(path + ": the PJRT client has no devices");
  device_ = devices.devices[0];
}

PjrtClient::~PjrtClient() {
  ClientArgs destroy{AXON_PJRT_RECORD_SIZE(ClientArgs, client), nullptr, client_};
  try {
    call(kClientDestroy, &destroy, "PJRT_Client_Destroy");
  } catch (...) {
  }
}

std::string PjrtClient::api_version() const {
  return std::to_string(api_->version.major_version) + "." + std::to_string(api_->version.minor_version);
}

std::shared_ptr<CompiledProgram> PjrtClient::compile(const std::string& module_text) {
  std::string code = module_text;
  static const char kFormat[] = "mlir";
  Program program{
      AXON_PJRT_RECORD_SIZE(Program, format_size), nullptr, code.data(), code.size(), kFormat, sizeof(kFormat) - 1};
  ClientCompileArgs compile{AXON_PJRT_RECORD_SIZE(ClientCompileArgs, executable),
                            nullptr,
                            client_,
                            &program,
                            kCompileOptions,
                            sizeof(kCompileOptions),
                            nullptr};
  call(kClientCompile, &compile, "compiling the StableHLO module");
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
    call(kExecutableNumOutputs, &outputs, "PJRT_Executable_NumOutputs");
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
  call(kLoadedExecutableGetExecutable, &get, "PJRT_LoadedExecutable_GetExecutable");
  return get.executable;
}

void PjrtClient::destroy_executable(Executable* executable) const {
  ExecutableArgs destroy{AXON_PJRT_RECORD_SIZE(ExecutableArgs, executable), nullptr, executable};
  call(kExecutableDestroy, &destroy, "PJRT_Executable_Destroy");
}

std::string PjrtClient::serialize(const CompiledProgram& program) const {
  Executable* description = executable_of(program);
  ExecutableSerializeArgs serialize{};
  serialize.struct_size = AXON_PJRT_RECORD_SIZE(ExecutableSerializeArgs, serialized_executable_deleter);
  serialize.executable = description;
  try {
    call(kExecutableSerialize, &serialize, "PJRT_Executable_Serialize");
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
  call(kExecutableDeserializeAndLoad, &load, "loading a serialized executable");
  return adopt(load.loaded_executable);
}

CompiledProgram::~CompiledProgram() {
  if (executable_ == nullptr) return;
  LoadedExecutableArgs destroy{AXON_PJRT_RECORD_SIZE(LoadedExecutableArgs, executable), nullptr, executable_};
  try {
    client_.call(kLoadedExecutableDestroy, &destroy, "PJRT_LoadedExecutable_Destroy");
  } catch (...) {
  }
}

void PjrtClient::destroy_event(Event* event) const {
  if (event == nullptr) return;
  EventArgs destroy{AXON_PJRT_RECORD_SIZE(EventArgs, event), nullptr, event};
  call(kEventDestroy, &destroy, "PJRT_Event_Destroy");
}

void PjrtClient::destroy_buffer(Buffer* buffer) const {
  if (buffer == nullptr) return;
  BufferArgs destroy{AXON_PJRT_RECORD_SIZE(BufferArgs, buffer), nullptr, buffer};
  call(kBufferDestroy, &destroy, "PJRT_Buffer_Destroy");
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
        for (Buffer* buffer : *buffers) release([&] { client.destroy_buffer(buffer); });
      }
      for (Event* event : events) release([&] { client.destroy_event(event); });
    }
    static void release(const std::function<void()>& destroy) {
      try {
        destroy();
      } catch (...) {  // nothing to report to while unwinding or after the results are out
      }
    }
  } cleanup{*this, arguments, results, host_buffer_events};
  for (size_t i = 0; i < inputs.size(); ++i) {
    ClientBufferFromHostBufferArgs make{};
    make.struct_size = AXON_PJRT_RECORD_SIZE(ClientBufferFromHostBufferArgs, buffer);
    make.client = client_;
    make.data = inputs[i].data;
    make.type = inputs[i].type;
    make.dims = inputs[i].dims.data();
    make.num_dims = inputs[i].dims.size();
    make.host_buffer_semantics = kImmutableZeroCopy;
    make.device = device_;
    call(kClientBufferFromHostBuffer, &make, "PJRT_Client_BufferFromHostBuffer");
    arguments[i] = make.buffer;
    host_buffer_events.push_back(make.done_with_host_buffer);
  }
  ExecuteOptions options{};
  options.struct_size = AXON_PJRT_RECORD_SIZE(ExecuteOptions, incarnation_ids);
  Buffer* const* argument_list = arguments.data();
  Buffer** output_list = results.data();
  Event* complete = nullptr;
  LoadedExecutableExecuteArgs execute{};
  execute.struct_size = AXON_PJRT_RECORD_SIZE(LoadedExecutableExecuteArgs, execute_device);
  execute.executable = program.executable();
  execute.options = &options;
  execute.argument_lists = &argument_list;
  execute.num_devices = 1;
  execute.num_args = arguments.size();
  execute.output_lists = &output_list;
  execute.device_complete_events = &complete;
  call(kLoadedExecutableExecute, &execute, "running the compiled program");
  if (complete != nullptr) {
    EventArgs await{AXON_PJRT_RECORD_SIZE(EventArgs, event), nullptr, complete};
    try {
      call(kEventAwait, &await, "running the compiled program");
    } catch (...) {
      destroy_event(complete);
      throw;
    }
    destroy_event(complete);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].bytes == 0) continue;
    BufferCopyRawToHostArgs copy{AXON_PJRT_RECORD_SIZE(BufferCopyRawToHostArgs, event),
                                 nullptr,
                                 results[i],
                                 outputs[i].data,
                                 0,
                                 static_cast<int64_t>(outputs[i].bytes),
                                 nullptr};
    call(kBufferCopyRawToHost, &copy, "copying a result out");
    if (copy.event != nullptr) {
      EventArgs await{AXON_PJRT_RECORD_SIZE(EventArgs, event), nullptr, copy.event};
      try {
        call(kEventAwait, &await, "copying a result out");
      } catch (...) {
        destroy_event(copy.event);
        throw;
      }
      destroy_event(copy.event);
    }
  }
}

}  // namespace axon::pjrt
