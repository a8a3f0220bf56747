// A PJRT plugin that is wrong in one way, chosen at build time, for the PJRT
// driver's refusal tests (test_pjrt_plugin_refusals.cpp):
//   AXON_BROKEN_PLUGIN_MAJOR_VERSION  reports PJRT C API 1.0 (another ABI)
//   AXON_BROKEN_PLUGIN_SHORT_TABLE    reports 0.106 with a table of only 20 calls
//   AXON_BROKEN_PLUGIN_CLIENT_FAILS   initializes, but creating a client fails
// Only the calls the driver makes before it gives up are filled in.

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace {

struct Record {  // every PJRT argument record starts like this
  size_t struct_size;
  void* extension_start;
};

struct ErrorMessageRecord {
  size_t struct_size;
  void* extension_start;
  const void* error;
  const char* message;
  size_t message_size;
};

struct ErrorCodeRecord {
  size_t struct_size;
  void* extension_start;
  const void* error;
  int code;
};

constexpr char kClientFailure[] = "this test plugin cannot create a client (no devices on purpose)";
int the_error = 0;  // the one PJRT_Error this plugin returns

void* destroy_error(void*) { return nullptr; }
void* error_message(void* record) {
  auto* args = static_cast<ErrorMessageRecord*>(record);
  args->message = kClientFailure;
  args->message_size = sizeof(kClientFailure) - 1;
  return nullptr;
}
void* error_code(void* record) {
  static_cast<ErrorCodeRecord*>(record)->code = 9;  // FAILED_PRECONDITION
  return nullptr;
}
void* succeed(void*) { return nullptr; }
void* fail(void*) { return &the_error; }

constexpr size_t kSlots = 136;

struct Table {
  size_t struct_size;
  void* extension_start;
  size_t version_struct_size;
  void* version_extension_start;
  int major_version;
  int minor_version;
  void* (*slots[kSlots])(void*);
};

Table make_table() {
  Table table{};
  table.struct_size = sizeof(Table);
  table.version_struct_size = 24;
  table.major_version = 0;
  table.minor_version = 106;
  for (auto& slot : table.slots) slot = &fail;
  table.slots[0] = &destroy_error;
  table.slots[1] = &error_message;
  table.slots[2] = &error_code;
  table.slots[3] = &succeed;  // Plugin_Initialize
#if defined(AXON_BROKEN_PLUGIN_MAJOR_VERSION)
  table.major_version = 1;
  table.minor_version = 0;
#elif defined(AXON_BROKEN_PLUGIN_SHORT_TABLE)
  table.struct_size = offsetof(Table, slots) + 20 * sizeof(void*);
#endif
  return table;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const void* GetPjrtApi() {
  static const Table table = make_table();
  return &table;
}
