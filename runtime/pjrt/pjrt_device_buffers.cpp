// PjrtClient's device side: device descriptions, buffers and execution on a
// chosen device (what the PJRT driver builds device memory and launches from),
// and the one Execute call that run() shares.

#include <utility>

#include "pjrt_client.h"

namespace axon::pjrt {

std::string PjrtClient::device_description(size_t device) const {
  DeviceGetDescriptionArgs get{AXON_PJRT_RECORD_SIZE(DeviceGetDescriptionArgs, device_description), nullptr,
                               devices_.at(device), nullptr};
  api_.call(kDeviceGetDescription, &get, "describing a PJRT device");
  auto text = [&](Slot slot, const char* what) {
    DeviceDescriptionStringArgs args{AXON_PJRT_RECORD_SIZE(DeviceDescriptionStringArgs, text_size), nullptr,
                                     get.device_description, nullptr, 0};
    api_.call(slot, &args, what);
    return std::string(args.text != nullptr ? args.text : "", args.text_size);
  };
  return text(kDeviceDescriptionKind, "reading a PJRT device's kind") + " " +
         text(kDeviceDescriptionDebugString, "reading a PJRT device's name");
}

std::optional<int64_t> PjrtClient::device_memory_limit(size_t device) const {
  DeviceMemoryStatsArgs stats{};
  stats.struct_size = AXON_PJRT_RECORD_SIZE(DeviceMemoryStatsArgs, peak_pool_bytes_is_set);
  stats.device = devices_.at(device);
  try {
    api_.call(kDeviceMemoryStats, &stats, "reading a PJRT device's memory statistics");
  } catch (const PjrtError&) {
    return std::nullopt;  // optional in PJRT (XLA's CPU plugin does not implement it)
  }
  if (!stats.bytes_limit_is_set || stats.bytes_limit <= 0) return std::nullopt;
  return stats.bytes_limit;
}

Buffer* PjrtClient::uninitialized(Device* device, BufferType type, const std::vector<int64_t>& dims,
                                  const char* what) const {
  ClientCreateUninitializedBufferArgs create{};
  create.struct_size = AXON_PJRT_RECORD_SIZE(ClientCreateUninitializedBufferArgs, buffer);
  create.client = client_;
  create.shape_dims = dims.data();
  create.shape_num_dims = dims.size();
  create.shape_element_type = type;
  create.device = device;
  api_.call(kClientCreateUninitializedBuffer, &create, what);
  return create.buffer;
}

Buffer* PjrtClient::from_host(Device* device, const void* data, BufferType type, const std::vector<int64_t>& dims,
                              HostBufferSemantics semantics, Event** done_with_host_buffer, const char* what) const {
  ClientBufferFromHostBufferArgs make{};
  make.struct_size = AXON_PJRT_RECORD_SIZE(ClientBufferFromHostBufferArgs, buffer);
  make.client = client_;
  make.data = data;
  make.type = type;
  make.dims = dims.data();
  make.num_dims = dims.size();
  make.host_buffer_semantics = semantics;
  make.device = device;
  api_.call(kClientBufferFromHostBuffer, &make, what);
  *done_with_host_buffer = make.done_with_host_buffer;
  return make.buffer;
}

Buffer* PjrtClient::allocate(size_t device, size_t bytes) {
  return uninitialized(devices_.at(device), kU8, {static_cast<int64_t>(bytes)}, "allocating a PJRT device buffer");
}

Buffer* PjrtClient::upload(size_t device, const void* data, BufferType type, const std::vector<int64_t>& dims) {
  const char* what = "copying host bytes to a PJRT device";
  Event* copied = nullptr;
  Buffer* buffer = from_host(devices_.at(device), data, type, dims, kImmutableOnlyDuringCall, &copied, what);
  try {
    api_.await_event(copied, what);
  } catch (...) {
    destroy(buffer);
    throw;
  }
  return buffer;
}

void PjrtClient::download(Buffer* buffer, size_t offset, size_t bytes, void* destination) {
  BufferCopyRawToHostArgs copy{AXON_PJRT_RECORD_SIZE(BufferCopyRawToHostArgs, event),
                               nullptr,
                               buffer,
                               destination,
                               static_cast<int64_t>(offset),
                               static_cast<int64_t>(bytes),
                               nullptr};
  api_.call(kBufferCopyRawToHost, &copy, "copying PJRT device bytes to the host");
  api_.await_event(copy.event, "copying PJRT device bytes to the host");
}

void PjrtClient::execute_and_wait(const CompiledProgram& program, Device* device, const std::vector<Buffer*>& arguments,
                                  bool keep_arguments, std::vector<Buffer*>& results) const {
  ExecuteOptions options{};
  options.struct_size = AXON_PJRT_RECORD_SIZE(ExecuteOptions, incarnation_ids);
  std::vector<int64_t> keep;
  if (keep_arguments) {
    keep.resize(arguments.size());
    for (size_t i = 0; i < keep.size(); ++i) keep[i] = static_cast<int64_t>(i);
    options.non_donatable_input_indices = keep.data();
    options.num_non_donatable_input_indices = keep.size();
  }
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
  execute.execute_device = device;
  api_.call(kLoadedExecutableExecute, &execute, "running the compiled program");
  api_.await_event(complete, "running the compiled program");
}

std::vector<Buffer*> PjrtClient::execute(const CompiledProgram& program, size_t device,
                                         const std::vector<Buffer*>& arguments) {
  std::vector<Buffer*> results(program.output_count(), nullptr);
  try {
    // No argument is donated: each stays the caller's.
    execute_and_wait(program, devices_.at(device), arguments, /*keep_arguments=*/true, results);
  } catch (...) {
    for (Buffer* result : results) destroy(result);
    throw;
  }
  return results;
}

}  // namespace axon::pjrt
