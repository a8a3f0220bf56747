#include "driver_choice.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "../emulated/entry_points.h"
#include "../null/null_driver.h"

namespace axon::loader {
namespace {

thread_local std::string loader_error;
thread_local bool loader_reported = false;

struct Choice {
  axon_driver_api table{};  // this build's layout; slots the driver lacks stay null
  bool loaded = false;
  std::string failure;  // why not, when !loaded
};

// A driver library's table, or a failure message.
const axon_driver_api* open_library(const std::string& path, std::string* failure) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);  // kept open for the process's lifetime
  if (handle == nullptr) {
    const char* why = dlerror();
    *failure = "AXON_DRIVER=" + path + " does not load: " + (why != nullptr ? why : "(no reason given)");
    return nullptr;
  }
  auto entry = reinterpret_cast<axon_driver_get_api_fn>(dlsym(handle, AXON_DRIVER_ENTRY_POINT));
  if (entry == nullptr) {
    *failure = "AXON_DRIVER=" + path + " exports no " + AXON_DRIVER_ENTRY_POINT + " (not an Axon driver)";
    return nullptr;
  }
  const axon_driver_api* api = entry();
  if (api == nullptr) *failure = "AXON_DRIVER=" + path + ": " + AXON_DRIVER_ENTRY_POINT + " returned null";
  return api;
}

// The library of the driver named `name` (e.g. "pjrt"), looked for next to
// the file holding this loader: torch_axon ships libaxon_driver_pjrt.so next to _C.so.
std::string bundled_driver_path(const std::string& name) {
  Dl_info info{};
  std::string directory = ".";
  if (dladdr(reinterpret_cast<void*>(&chosen_driver), &info) != 0 && info.dli_fname != nullptr) {
    const std::string file = info.dli_fname;
    const std::size_t slash = file.rfind('/');
    if (slash != std::string::npos) directory = file.substr(0, slash);
  }
  return directory + "/libaxon_driver_" + name + ".so";
}

Choice choose() {
  Choice choice;
  const char* variable = std::getenv("AXON_DRIVER");
  const std::string requested = variable != nullptr ? variable : "";
  const axon_driver_api* api = nullptr;
  if (requested.empty() || requested == "emulated") {
    api = emulated::driver_api();
  } else if (requested == "null") {
    api = null_driver::driver_api();
  } else if (requested == "pjrt") {
    api = open_library(bundled_driver_path(requested), &choice.failure);
  } else if (requested.find('/') != std::string::npos) {
    api = open_library(requested, &choice.failure);
  } else {
    choice.failure =
        "AXON_DRIVER must be \"emulated\", \"null\", \"pjrt\" or a path to a driver library (containing a "
        "'/'), got \"" +
        requested + "\"";
  }
  if (api == nullptr) return choice;
  if (api->abi_version != AXON_DRIVER_ABI_VERSION) {
    choice.failure = std::string("driver \"") + (api->name != nullptr ? api->name : "?") + "\" was built for " +
                     "boundary ABI version " + std::to_string(api->abi_version) + ", this loader speaks version " +
                     std::to_string(AXON_DRIVER_ABI_VERSION);
    return choice;
  }
  std::memcpy(&choice.table, api, std::min(api->struct_size, sizeof(axon_driver_api)));
  choice.loaded = true;
  return choice;
}

}  // namespace

const axon_driver_api* chosen_driver(const char* call) {
  static const Choice choice = choose();
  if (choice.loaded) return &choice.table;
  set_loader_error(call, ("driver loading failed: " + choice.failure).c_str());
  return nullptr;
}

const char* loader_error_message() { return loader_reported ? loader_error.c_str() : nullptr; }

void forget_loader_error() { loader_reported = false; }

void set_loader_error(const char* call, const char* detail) {
  loader_reported = true;
  try {
    loader_error = std::string("[") + call + "] " + detail;
  } catch (...) {
    loader_error.clear();
  }
}

}  // namespace axon::loader
