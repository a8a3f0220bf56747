#include "stablehlo_program.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

#include "../pjrt/pjrt_client.h"
#include "../pjrt/stablehlo_signature.h"
#include "driver_error.h"

using namespace axon::common;
using axon::pjrt::ArrayType;
using axon::pjrt::main_signature;
using axon::pjrt::Signature;
using axon::pjrt::tensor_types;

namespace axon::emulated {
namespace {

// The process's PJRT client, created on first use (null, with the reason, if it cannot be).
struct PluginState {
  std::once_flag once;
  std::unique_ptr<pjrt::PjrtClient> client;
  std::string failure;
};

PluginState& plugin() {
  static auto* state = new PluginState();  // leaked, like the driver: executables may outlive static destructors
  std::call_once(state->once, [] {
    const char* path = std::getenv("AXON_PJRT_CPU_PLUGIN");
    if (path == nullptr || *path == '\0') {
      state->failure = "AXON_PJRT_CPU_PLUGIN (the path of XLA's CPU PJRT plugin, libpjrt_cpu.so) is not set";
      return;
    }
    try {
      state->client = std::make_unique<pjrt::PjrtClient>(path);
    } catch (const std::exception& error) {
      state->failure = error.what();
    }
  });
  return *state;
}

// An image of format "xla-cpu-executable": this magic, the plugin's API
// version, a NUL; @main's signature text, a NUL; the plugin's serialized
// program. Version 2: the program takes its results in place
// (with_results_in_place), after the arguments the signature lists.
constexpr char kImageMagic[] = "axon-xla-cpu-executable/2";

class StablehloProgram final : public LoadedProgram {
 public:
  StablehloProgram(std::shared_ptr<pjrt::CompiledProgram> program, Signature signature)
      : program_(std::move(program)), signature_(std::move(signature)) {
    arguments_ = tensor_types(signature_.text, 0, signature_.arrow);
    results_ = tensor_types(signature_.text, signature_.arrow, signature_.text.size());
    if (program_->output_count() != results_.size()) {
      fail(AXON_ERROR_INVALID_VALUE, "@main's signature lists ", results_.size(), " results, the compiled program has ",
           program_->output_count());
    }
  }

  const void* entry(const char* name, std::size_t binding_count, std::size_t constant_bytes) const override {
    if (std::strcmp(name, "main") != 0) {
      fail(AXON_ERROR_INVALID_VALUE, "a StableHLO executable's entry point is \"main\", got \"", name, "\"");
    }
    if (binding_count != arguments_.size() + results_.size() || constant_bytes != 0) {
      fail(AXON_ERROR_INVALID_VALUE, "@main binds ", arguments_.size(), " arguments and ", results_.size(),
           " results and takes no constants, got ", binding_count, " bindings and ", constant_bytes, " constant bytes");
    }
    return this;
  }

  bool run(const void*, const axon_host_dispatch& dispatch, char* message) const override {
    std::vector<pjrt::HostArray> inputs, outputs;
    for (std::size_t i = 0; i < dispatch.binding_count; ++i) {
      const bool is_argument = i < arguments_.size();
      const ArrayType& type = is_argument ? arguments_[i] : results_[i - arguments_.size()];
      if (dispatch.binding_bytes[i] < type.bytes()) {
        std::snprintf(message, AXON_TASK_MESSAGE_CAPACITY, "binding %zu holds %zu bytes, @main's %s needs %zu", i,
                      dispatch.binding_bytes[i], is_argument ? "argument" : "result", type.bytes());
        return false;
      }
      // An empty array's binding may have no address: hand the plugin an aligned one it will not read.
      alignas(64) static char empty_array[64];
      void* data = type.bytes() == 0 ? empty_array : dispatch.bindings[i];
      (is_argument ? inputs : outputs).push_back({data, type.type, type.dims, type.bytes()});
    }
    try {
      plugin().client->run(*program_, inputs, outputs);
      return true;
    } catch (const std::exception& error) {
      std::snprintf(message, AXON_TASK_MESSAGE_CAPACITY, "%s", error.what());
      return false;
    }
  }

  std::string serialize(const char** format) const override {
    // Built once: a caller sizes its buffer with one call and fills it with a
    // second, and the plugin's serialization copies the whole program each time.
    std::lock_guard<std::mutex> lock(image_mutex_);
    if (image_.empty()) {
      std::string compiled;
      try {
        compiled = plugin().client->serialize(*program_);
      } catch (const std::exception& error) {
        fail(AXON_ERROR_NOT_SUPPORTED, error.what());
      }
      std::string image(kImageMagic, sizeof(kImageMagic));  // with its NUL
      image += plugin().client->api_version();
      image.push_back('\0');
      image += signature_.text;
      image.push_back('\0');
      image_ = image + compiled;
    }
    *format = AXON_EMULATED_FORMAT_XLA_CPU;
    return image_;
  }

 private:
  std::shared_ptr<pjrt::CompiledProgram> program_;
  Signature signature_;
  std::vector<ArrayType> arguments_;
  std::vector<ArrayType> results_;
  mutable std::mutex image_mutex_;
  mutable std::string image_;  // serialize's answer, once asked
};

}  // namespace

bool stablehlo_supported() { return plugin().client != nullptr; }

std::shared_ptr<LoadedProgram> load_stablehlo(const std::string& text) {
  PluginState& state = plugin();
  if (state.client == nullptr)
    fail(AXON_ERROR_NOT_SUPPORTED, "StableHLO executables need XLA's CPU plugin: ", state.failure);
  Signature signature = main_signature(text);
  std::shared_ptr<pjrt::CompiledProgram> program;
  try {
    program = state.client->compile(pjrt::with_results_in_place(text));
  } catch (const std::exception& error) {
    fail(AXON_ERROR_INVALID_VALUE, error.what());
  }
  program->set_results_in_place(true);
  return std::make_shared<StablehloProgram>(std::move(program), std::move(signature));
}

std::shared_ptr<LoadedProgram> load_xla_cpu_image(const std::string& image) {
  PluginState& state = plugin();
  if (state.client == nullptr)
    fail(AXON_ERROR_NOT_SUPPORTED, "XLA CPU executables need XLA's CPU plugin: ", state.failure);
  // Three NUL-terminated fields (magic, API version, signature), then the compiled program.
  std::size_t fields[3];
  std::size_t at = 0;
  for (std::size_t& end : fields) {
    end = image.find('\0', at);
    if (end == std::string::npos) fail(AXON_ERROR_INVALID_VALUE, "a damaged ", AXON_EMULATED_FORMAT_XLA_CPU, " image");
    at = end + 1;
  }
  if (image.compare(0, fields[0], kImageMagic) != 0) {
    fail(AXON_ERROR_INVALID_VALUE, "not an ", AXON_EMULATED_FORMAT_XLA_CPU, " image (no magic)");
  }
  const std::string version = image.substr(fields[0] + 1, fields[1] - fields[0] - 1);
  if (version != state.client->api_version()) {
    fail(AXON_ERROR_INVALID_VALUE, "the image was compiled for PJRT API ", version, ", this plugin is ",
         state.client->api_version());
  }
  Signature signature = main_signature(image.substr(fields[1] + 1, fields[2] - fields[1] - 1) + "{");
  std::shared_ptr<pjrt::CompiledProgram> program;
  try {
    program = state.client->deserialize(image.substr(fields[2] + 1));
  } catch (const std::exception& error) {
    fail(AXON_ERROR_INVALID_VALUE, error.what());
  }
  program->set_results_in_place(true);
  return std::make_shared<StablehloProgram>(std::move(program), std::move(signature));
}

}  // namespace axon::emulated
