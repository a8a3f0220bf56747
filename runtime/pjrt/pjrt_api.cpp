#include "pjrt_api.h"

#include <dlfcn.h>

namespace axon::pjrt {
namespace {

using Function = Error* (*)(void*);

void* slot_pointer(const ApiHeader* api, Slot slot) {
  return *reinterpret_cast<void* const*>(reinterpret_cast<const char*>(api) + sizeof(ApiHeader) +
                                         sizeof(void*) * static_cast<size_t>(slot));
}

bool table_has(const ApiHeader* api, Slot slot) {
  return sizeof(ApiHeader) + sizeof(void*) * (static_cast<size_t>(slot) + 1) <= api->struct_size;
}

// The error's code and message; destroys it.
PjrtError consume(const ApiHeader* api, Error* error, const char* what) {
  ErrorMessageArgs message{AXON_PJRT_RECORD_SIZE(ErrorMessageArgs, message_size), nullptr, error, nullptr, 0};
  reinterpret_cast<void (*)(ErrorMessageArgs*)>(slot_pointer(api, kErrorMessage))(&message);
  std::string text(message.message != nullptr ? message.message : "(no message)", message.message_size);
  ErrorGetCodeArgs code{AXON_PJRT_RECORD_SIZE(ErrorGetCodeArgs, code), nullptr, error, -1};
  if (Error* failed = reinterpret_cast<Function>(slot_pointer(api, kErrorGetCode))(&code)) {
    code.code = -1;  // an error about the error: keep the message, drop the code
    ErrorDestroyArgs destroy{AXON_PJRT_RECORD_SIZE(ErrorDestroyArgs, error), nullptr, failed};
    reinterpret_cast<void (*)(ErrorDestroyArgs*)>(slot_pointer(api, kErrorDestroy))(&destroy);
  }
  ErrorDestroyArgs destroy{AXON_PJRT_RECORD_SIZE(ErrorDestroyArgs, error), nullptr, error};
  reinterpret_cast<void (*)(ErrorDestroyArgs*)>(slot_pointer(api, kErrorDestroy))(&destroy);
  return PjrtError(std::string(what) + ": " + text, code.code);
}

}  // namespace

PjrtApi::PjrtApi(const std::string& path) : path_(path) {
  library_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library_ == nullptr) {
    const char* why = dlerror();
    throw PjrtError("cannot load the PJRT plugin " + path + ": " + (why != nullptr ? why : "?"), -1);
  }
  auto get_api = reinterpret_cast<const ApiHeader* (*)()>(dlsym(library_, "GetPjrtApi"));
  if (get_api == nullptr) throw PjrtError(path + " exports no GetPjrtApi: it is not a PJRT plugin", -1);
  api_ = get_api();
  if (api_ == nullptr) throw PjrtError(path + ": GetPjrtApi returned no table", -1);
  if (api_->version.major_version != 0) {
    throw PjrtError(path + " implements PJRT C API " + version() +
                        "; Axon speaks major version 0 (a plugin of another major version has another ABI)",
                    -1);
  }
  if (!table_has(api_, kNewestSlotUsed)) {
    throw PjrtError(path + " implements PJRT C API " + version() + ", whose table of " +
                        std::to_string((api_->struct_size - sizeof(ApiHeader)) / sizeof(void*)) +
                        " calls lacks ones Axon uses (it needs at least " + std::to_string(kNewestSlotUsed + 1) +
                        "); use a newer plugin",
                    -1);
  }
  PlainArgs initialize{AXON_PJRT_RECORD_SIZE(PlainArgs, extension_start), nullptr};
  call(kPluginInitialize, &initialize, "initializing the PJRT plugin");
}

void PjrtApi::call_slot(Slot slot, void* args, const char* what) const {
  auto function = reinterpret_cast<Function>(slot_pointer(api_, slot));
  if (function == nullptr) {
    throw PjrtError(std::string(what) + ": the PJRT plugin leaves call " + std::to_string(slot) + " empty",
                    kUnimplemented);
  }
  if (Error* error = function(args)) throw consume(api_, error, what);
}

std::string PjrtApi::version() const {
  return std::to_string(api_->version.major_version) + "." + std::to_string(api_->version.minor_version);
}

void PjrtApi::await_event(Event* event, const char* what) const {
  if (event == nullptr) return;
  EventArgs await{AXON_PJRT_RECORD_SIZE(EventArgs, event), nullptr, event};
  try {
    call(kEventAwait, &await, what);
  } catch (...) {
    destroy_event(event);
    throw;
  }
  destroy_event(event);
}

void PjrtApi::destroy_event(Event* event) const noexcept {
  if (event == nullptr) return;
  EventArgs destroy{AXON_PJRT_RECORD_SIZE(EventArgs, event), nullptr, event};
  try {
    call(kEventDestroy, &destroy, "PJRT_Event_Destroy");
  } catch (...) {  // nothing to report to: the event is gone either way
  }
}

void PjrtApi::destroy_buffer(Buffer* buffer) const noexcept {
  if (buffer == nullptr) return;
  BufferArgs destroy{AXON_PJRT_RECORD_SIZE(BufferArgs, buffer), nullptr, buffer};
  try {
    call(kBufferDestroy, &destroy, "PJRT_Buffer_Destroy");
  } catch (...) {
  }
}

}  // namespace axon::pjrt
