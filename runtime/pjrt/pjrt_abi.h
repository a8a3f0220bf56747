// The slice of the PJRT C API (XLA's plugin interface) that Axon uses,
// declared from its published ABI: slot positions, record layouts, enum
// values. Checked against XLA's CPU plugin reporting API version 0.106.
//
// How the ABI works: GetPjrtApi() returns a table whose header (40 bytes) is
// followed by function pointers; the table only ever grows, so slot k is at
// byte 40 + 8k in every 0.x plugin. Each call takes a pointer to an argument
// record that starts with its own size in bytes (the end of its last field,
// without tail padding) and an extension pointer; the plugin refuses a record
// smaller than the one it was built with. Calls return a PJRT_Error* (null on
// success) that the caller destroys.
#pragma once

#include <cstddef>
#include <cstdint>

namespace axon::pjrt {

struct Error;
struct Event;
struct Client;
struct Device;
struct Executable;
struct LoadedExecutable;
struct Buffer;
struct DeviceDescription;
struct Memory;

// Record size: the end of its last field.
#define AXON_PJRT_RECORD_SIZE(type, last) (offsetof(type, last) + sizeof(((type*)nullptr)->last))

struct ApiVersion {
  size_t struct_size;
  void* extension_start;
  int major_version;
  int minor_version;
};

struct ApiHeader {
  size_t struct_size;  // of the whole table, function pointers included
  void* extension_start;
  ApiVersion version;
};

// Slot numbers of the calls used (function pointers before them in the table).
enum Slot : size_t {
  kErrorDestroy = 0,
  kErrorMessage = 1,
  kErrorGetCode = 2,
  kPluginInitialize = 3,
  kEventDestroy = 5,
  kEventAwait = 8,
  kClientCreate = 10,
  kClientDestroy = 11,
  kClientPlatformName = 12,
  kClientAddressableDevices = 16,
  kClientCompile = 20,
  kClientBufferFromHostBuffer = 22,
  kDeviceDescriptionKind = 26,
  kDeviceDescriptionDebugString = 27,
  kDeviceGetDescription = 29,
  kDeviceMemoryStats = 34,
  kExecutableDestroy = 40,
  kExecutableNumOutputs = 44,
  kExecutableSerialize = 49,
  kLoadedExecutableDestroy = 50,
  kLoadedExecutableGetExecutable = 51,
  kLoadedExecutableExecute = 55,
  kExecutableDeserializeAndLoad = 56,
  kBufferDestroy = 58,
  kBufferUnsafePointer = 73,
  kBufferCopyRawToHost = 100,
  kClientCreateUninitializedBuffer = 112,
};

// The newest slot any Axon caller uses: a plugin whose table ends before it
// is too old (PjrtApi refuses it at load).
constexpr Slot kNewestSlotUsed = kClientCreateUninitializedBuffer;

// PJRT_Error_Code values (absl status codes) Axon tells apart.
enum ErrorCode : int {
  kInvalidArgument = 3,
  kResourceExhausted = 8,
  kUnimplemented = 12,
};

enum BufferType : int {
  kPred = 1,
  kS8 = 2,
  kS16 = 3,
  kS32 = 4,
  kS64 = 5,
  kU8 = 6,
  kU16 = 7,
  kU32 = 8,
  kU64 = 9,
  kF16 = 10,
  kF32 = 11,
  kF64 = 12,
  kBF16 = 13,
  kC64 = 14,
  kC128 = 15,
};

// How BufferFromHostBuffer may use the caller's bytes.
enum HostBufferSemantics : int {
  kImmutableOnlyDuringCall = 0,  // copied before the call returns
  kImmutableZeroCopy = 2,        // aliased while the buffer lives (64-byte aligned bytes; others are copied)
  kMutableZeroCopy = 3,          // the same, and the plugin may also write the bytes (a donated argument)
};

struct ErrorDestroyArgs {
  size_t struct_size;
  void* extension_start;
  Error* error;
};
struct ErrorMessageArgs {
  size_t struct_size;
  void* extension_start;
  const Error* error;
  const char* message;  // out, lives as long as `error`
  size_t message_size;  // out
};
struct ErrorGetCodeArgs {
  size_t struct_size;
  void* extension_start;
  const Error* error;
  int code;  // out: an ErrorCode
};
struct PlainArgs {  // Plugin_Initialize
  size_t struct_size;
  void* extension_start;
};
struct EventArgs {  // Event_Destroy, Event_Await
  size_t struct_size;
  void* extension_start;
  Event* event;
};
// A create option (PJRT_NamedValue). Only int64 values are used.
enum NamedValueType : int { kNamedInt64 = 1 };
struct NamedValue {
  size_t struct_size;
  void* extension_start;
  const char* name;
  size_t name_size;
  NamedValueType type;
  int64_t int64_value;  // the first member of the value union
  size_t value_size;    // 1 for a scalar
};
struct ClientCreateArgs {
  size_t struct_size;
  void* extension_start;
  const NamedValue* create_options;
  size_t num_options;
  void* kv_get_callback;  // distributed key-value store hooks; unused
  void* kv_get_user_arg;
  void* kv_put_callback;
  void* kv_put_user_arg;
  Client* client;  // out
  void* kv_try_get_callback;
  void* kv_try_get_user_arg;
};
struct ClientArgs {  // Client_Destroy
  size_t struct_size;
  void* extension_start;
  Client* client;
};
struct ClientAddressableDevicesArgs {
  size_t struct_size;
  void* extension_start;
  Client* client;
  Device* const* devices;  // out, owned by the client
  size_t num_devices;      // out
};
struct ClientPlatformNameArgs {
  size_t struct_size;
  void* extension_start;
  Client* client;
  const char* platform_name;  // out, owned by the client
  size_t platform_name_size;  // out
};
struct DeviceGetDescriptionArgs {
  size_t struct_size;
  void* extension_start;
  Device* device;
  DeviceDescription* device_description;  // out, owned by the device
};
struct DeviceDescriptionStringArgs {  // DeviceDescription_Kind, DeviceDescription_DebugString
  size_t struct_size;
  void* extension_start;
  DeviceDescription* device_description;
  const char* text;  // out, owned by the description
  size_t text_size;  // out
};
// Device_MemoryStats: every field after bytes_in_use is optional, with a flag.
struct DeviceMemoryStatsArgs {
  size_t struct_size;
  void* extension_start;
  Device* device;
  int64_t bytes_in_use;
  int64_t peak_bytes_in_use;
  bool peak_bytes_in_use_is_set;
  int64_t num_allocs;
  bool num_allocs_is_set;
  int64_t largest_alloc_size;
  bool largest_alloc_size_is_set;
  int64_t bytes_limit;
  bool bytes_limit_is_set;
  int64_t bytes_reserved;
  bool bytes_reserved_is_set;
  int64_t peak_bytes_reserved;
  bool peak_bytes_reserved_is_set;
  int64_t bytes_reservable_limit;
  bool bytes_reservable_limit_is_set;
  int64_t largest_free_block_bytes;
  bool largest_free_block_bytes_is_set;
  int64_t pool_bytes;
  bool pool_bytes_is_set;
  int64_t peak_pool_bytes;
  bool peak_pool_bytes_is_set;
};
struct ClientCreateUninitializedBufferArgs {
  size_t struct_size;
  void* extension_start;
  Client* client;
  const int64_t* shape_dims;
  size_t shape_num_dims;
  BufferType shape_element_type;
  void* shape_layout;  // null: default layout
  Device* device;
  Memory* memory;  // null: the device's default memory
  Buffer* buffer;  // out; caller destroys
};
struct Program {
  size_t struct_size;
  void* extension_start;
  char* code;
  size_t code_size;
  const char* format;  // "mlir": StableHLO text or bytecode
  size_t format_size;
};
struct ClientCompileArgs {
  size_t struct_size;
  void* extension_start;
  Client* client;
  const Program* program;
  const char* compile_options;  // a serialized xla.CompileOptionsProto
  size_t compile_options_size;
  LoadedExecutable* executable;  // out
};
struct ClientBufferFromHostBufferArgs {
  size_t struct_size;
  void* extension_start;
  Client* client;
  const void* data;
  BufferType type;
  const int64_t* dims;
  size_t num_dims;
  const int64_t* byte_strides;  // null: dense row-major
  size_t num_byte_strides;
  HostBufferSemantics host_buffer_semantics;
  Device* device;
  void* memory;                  // null: the device's default memory
  void* device_layout;           // null: default layout
  Event* done_with_host_buffer;  // out; caller destroys
  Buffer* buffer;                // out; caller destroys
};
struct ExecutableArgs {  // Executable_Destroy
  size_t struct_size;
  void* extension_start;
  Executable* executable;
};
struct ExecutableNumOutputsArgs {
  size_t struct_size;
  void* extension_start;
  Executable* executable;
  size_t num_outputs;  // out
};
struct SerializedExecutable;
struct ExecutableSerializeArgs {
  size_t struct_size;
  void* extension_start;
  const Executable* executable;
  const char* serialized_bytes;                 // out; lives as long as serialized_executable
  size_t serialized_bytes_size;                 // out
  SerializedExecutable* serialized_executable;  // out
  void (*serialized_executable_deleter)(SerializedExecutable* serialized);  // out; the caller calls it once
};
struct ExecutableDeserializeAndLoadArgs {
  size_t struct_size;
  void* extension_start;
  Client* client;
  const char* serialized_executable;
  size_t serialized_executable_size;
  LoadedExecutable* loaded_executable;     // out; caller destroys
  const char* overridden_compile_options;  // null: the options it was compiled with (0.106 requires the field)
  size_t overridden_compile_options_size;
};
struct LoadedExecutableArgs {  // LoadedExecutable_Destroy
  size_t struct_size;
  void* extension_start;
  LoadedExecutable* executable;
};
struct LoadedExecutableGetExecutableArgs {
  size_t struct_size;
  void* extension_start;
  LoadedExecutable* loaded;
  Executable* executable;  // out; caller destroys
};
struct ExecuteOptions {  // 0.106 requires every field through incarnation_ids
  size_t struct_size;
  void* extension_start;
  void** send_callbacks;
  void** recv_callbacks;
  size_t num_send_ops;
  size_t num_recv_ops;
  int launch_id;
  const int64_t* non_donatable_input_indices;
  size_t num_non_donatable_input_indices;
  void* context;
  const char* call_location;
  size_t num_tasks;
  int* task_ids;
  int64_t* incarnation_ids;
};
struct LoadedExecutableExecuteArgs {
  size_t struct_size;
  void* extension_start;
  LoadedExecutable* executable;
  ExecuteOptions* options;
  Buffer* const* const* argument_lists;  // [devices][arguments]
  size_t num_devices;
  size_t num_args;
  Buffer** const* output_lists;    // [devices][outputs], caller-allocated arrays
  Event** device_complete_events;  // [devices], out, optional
  Device* execute_device;          // optional
};
struct BufferArgs {  // Buffer_Destroy
  size_t struct_size;
  void* extension_start;
  Buffer* buffer;
};
struct BufferUnsafePointerArgs {
  size_t struct_size;
  void* extension_start;
  Buffer* buffer;
  uintptr_t pointer;  // out: the host address of a host-resident buffer's bytes
};
struct BufferCopyRawToHostArgs {
  size_t struct_size;
  void* extension_start;
  Buffer* buffer;
  void* dst;
  int64_t offset;
  int64_t transfer_size;
  Event* event;  // out; caller destroys
};

// CompileOptionsProto { executable_build_options (3) { num_replicas (4) = 1,
// num_partitions (5) = 1 } }: the CPU plugin aborts without a replica count.
inline constexpr char kCompileOptions[] = {0x1a, 0x04, 0x20, 0x01, 0x28, 0x01};

// The same plus compile_portable_executable (4) = true: the executable is not
// bound to a device and runs on whichever one Execute's execute_device names.
inline constexpr char kPortableCompileOptions[] = {0x1a, 0x04, 0x20, 0x01, 0x28, 0x01, 0x20, 0x01};

}  // namespace axon::pjrt
