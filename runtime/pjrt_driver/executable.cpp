// Entry points (common/driver_table.h puts them in the table): executables.
//
// Format "stablehlo-mlir" is compiled by the plugin at load, portable (one
// executable serves every device; the launch names the device). Its own image,
// format "pjrt-executable", is the plugin's serialized program plus what the
// driver needs to check and bind it, and loads without compiling.
//
// A launch checks its entry point and bindings at the call, then queues
// DeviceWork that gives each argument binding's bytes to the program as a
// typed PJRT buffer, runs it on the stream's device, and writes each result
// into its binding. The bytes reach the typed buffers through the host (the
// same path as partial writes, see device_memory.h).

#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "axon/executable.h"
#include "axon/formats/stablehlo.h"
#include "boundary.h"
#include "driver.h"
#include "executable_arguments.h"
#include "executable_registry.h"
#include "stablehlo_signature.h"
#include "submission.h"

#define AXON_PJRT_FORMAT_EXECUTABLE "pjrt-executable"

using namespace axon::common;
using namespace axon::pjrt_driver;
using axon::pjrt::ArrayType;

namespace {

// An image of format "pjrt-executable": this magic, the plugin's API version
// and its device kind, each NUL-terminated; @main's signature, a NUL; then the
// plugin's serialized program.
constexpr char kImageMagic[] = "axon-pjrt-executable/1";

struct Program {
  std::shared_ptr<axon::pjrt::CompiledProgram> compiled;
  axon::pjrt::Signature signature;
  std::vector<ArrayType> arguments;
  std::vector<ArrayType> results;
  std::mutex image_mutex;
  std::string image;  // serialize's answer, once asked
};

std::string plugin_identity(axon::pjrt::PjrtClient& client) {
  return client.api_version() + '\0' + client.device_description(0);
}

std::shared_ptr<Program> make_program(std::shared_ptr<axon::pjrt::CompiledProgram> compiled,
                                      axon::pjrt::Signature signature) {
  auto program = std::make_shared<Program>();
  program->compiled = std::move(compiled);
  program->signature = std::move(signature);
  program->arguments = axon::pjrt::tensor_types(program->signature.text, 0, program->signature.arrow);
  program->results =
      axon::pjrt::tensor_types(program->signature.text, program->signature.arrow, program->signature.text.size());
  if (program->compiled->output_count() != program->results.size()) {
    fail(AXON_ERROR_INVALID_VALUE, "@main's signature lists ", program->results.size(),
         " results, the compiled program has ", program->compiled->output_count());
  }
  return program;
}

std::shared_ptr<Program> load_stablehlo(Driver& driver, const std::string& text) {
  axon::pjrt::Signature signature = axon::pjrt::main_signature(text);
  std::shared_ptr<axon::pjrt::CompiledProgram> compiled;
  try {
    compiled = driver.client().compile(text, /*portable=*/true);
  } catch (const std::exception& error) {
    fail(AXON_ERROR_INVALID_VALUE, error.what());
  }
  return make_program(std::move(compiled), std::move(signature));
}

std::shared_ptr<Program> load_image(Driver& driver, const std::string& image) {
  std::size_t fields[4];
  std::size_t at = 0;
  for (std::size_t& end : fields) {
    end = image.find('\0', at);
    if (end == std::string::npos) fail(AXON_ERROR_INVALID_VALUE, "a damaged ", AXON_PJRT_FORMAT_EXECUTABLE, " image");
    at = end + 1;
  }
  if (image.compare(0, fields[0], kImageMagic) != 0) {
    fail(AXON_ERROR_INVALID_VALUE, "not an ", AXON_PJRT_FORMAT_EXECUTABLE, " image (no magic)");
  }
  const std::string identity = image.substr(fields[0] + 1, fields[2] - fields[0] - 1);
  if (identity != plugin_identity(driver.client())) {
    fail(AXON_ERROR_INVALID_VALUE, "the image was compiled by another PJRT plugin or version");
  }
  axon::pjrt::Signature signature =
      axon::pjrt::main_signature(image.substr(fields[2] + 1, fields[3] - fields[2] - 1) + "{");
  std::shared_ptr<axon::pjrt::CompiledProgram> compiled;
  try {
    compiled = driver.client().deserialize(image.substr(fields[3] + 1));
  } catch (const std::exception& error) {
    fail(AXON_ERROR_INVALID_VALUE, error.what());
  }
  return make_program(std::move(compiled), std::move(signature));
}

// Runs one launch on the device's worker; the buffers it makes are released on every path.
void run_launch(Driver& driver, const Program& program, int device,
                const std::vector<std::optional<DeviceRange>>& ranges) {
  axon::pjrt::PjrtClient& client = driver.client();
  std::vector<axon::pjrt::Buffer*> arguments;
  std::vector<axon::pjrt::Buffer*> results;
  struct Release {
    axon::pjrt::PjrtClient& client;
    std::vector<axon::pjrt::Buffer*>& arguments;
    std::vector<axon::pjrt::Buffer*>& results;
    ~Release() {
      for (auto* buffer : arguments) client.destroy(buffer);
      for (auto* buffer : results) client.destroy(buffer);
    }
  } release{client, arguments, results};
  std::vector<unsigned char> bytes;
  for (std::size_t i = 0; i < program.arguments.size(); ++i) {
    const ArrayType& type = program.arguments[i];
    bytes.resize(type.bytes() + 1);  // never empty: an empty array still needs an address
    if (type.bytes() > 0) driver.memory().read(*ranges[i], type.bytes(), bytes.data());
    arguments.push_back(client.upload(static_cast<std::size_t>(device), bytes.data(), type.type, type.dims));
  }
  results = client.execute(*program.compiled, static_cast<std::size_t>(device), arguments);
  for (std::size_t i = 0; i < program.results.size(); ++i) {
    const ArrayType& type = program.results[i];
    if (type.bytes() == 0) continue;
    bytes.resize(type.bytes());
    client.download(results[i], 0, type.bytes(), bytes.data());
    driver.memory().write(*ranges[program.arguments.size() + i], type.bytes(), bytes.data());
  }
}

struct LoadedExecutable final : axon_executable_object {
  using axon_executable_object::axon_executable_object;
  std::shared_ptr<Program> program;
};

using Executables = ExecutableRegistry<Driver>;

}  // namespace

template <>
axon_status EntryPoints::axon_executable_format_supported(int device, const char* format, int* supported) {
  return guarded_call(__func__, [&] {
    Driver::running().require_device(device);
    require_output(supported, "supported");
    if (format == nullptr) fail(AXON_ERROR_INVALID_VALUE, "expected a format name, got null");
    *supported =
        std::strcmp(format, AXON_FORMAT_STABLEHLO) == 0 || std::strcmp(format, AXON_PJRT_FORMAT_EXECUTABLE) == 0;
    return AXON_SUCCESS;
  });
}

template <>
axon_status EntryPoints::axon_executable_load(int device, const char* format, const void* image, size_t image_bytes,
                                              axon_executable* executable) {
  return guarded_call(__func__, [&] {
    Driver& driver = Driver::running();
    driver.require_device(device);
    require_output(executable, "executable");
    if (image == nullptr) fail(AXON_ERROR_INVALID_VALUE, "expected an image, got null");
    auto loaded = std::make_unique<LoadedExecutable>(device);
    const std::string bytes(static_cast<const char*>(image), image_bytes);
    if (format != nullptr && std::strcmp(format, AXON_FORMAT_STABLEHLO) == 0) {
      loaded->program = load_stablehlo(driver, bytes);
    } else if (format != nullptr && std::strcmp(format, AXON_PJRT_FORMAT_EXECUTABLE) == 0) {
      loaded->program = load_image(driver, bytes);
    } else {
      fail(AXON_ERROR_NOT_SUPPORTED, "expected format \"", AXON_FORMAT_STABLEHLO, "\" or \"",
           AXON_PJRT_FORMAT_EXECUTABLE, "\", got ", format == nullptr ? "null" : format);
    }
    *executable = Executables::adopt(std::move(loaded));
    return AXON_SUCCESS;
  });
}

template <>
axon_status EntryPoints::axon_executable_serialize(axon_executable executable, const char** format, void* image,
                                                   size_t capacity, size_t* image_bytes) {
  return guarded_call(__func__, [&] {
    Driver& driver = Driver::running();
    require_output(format, "format");
    require_output(image_bytes, "image_bytes");
    Program& program = *Executables::find<LoadedExecutable>(executable)->program;
    std::lock_guard<std::mutex> lock(program.image_mutex);
    if (program.image.empty()) {
      std::string compiled;
      try {
        compiled = driver.client().serialize(*program.compiled);
      } catch (const std::exception& error) {
        fail(AXON_ERROR_NOT_SUPPORTED, error.what());
      }
      std::string built(kImageMagic, sizeof(kImageMagic));  // with its NUL
      built += plugin_identity(driver.client());
      built.push_back('\0');
      built += program.signature.text;
      built.push_back('\0');
      program.image = built + compiled;
    }
    *format = AXON_PJRT_FORMAT_EXECUTABLE;
    copy_image_out(program.image, image, capacity, image_bytes);
    return AXON_SUCCESS;
  });
}

template <>
axon_status EntryPoints::axon_stream_launch_executable(axon_stream stream, axon_executable executable,
                                                       const char* entry_point, const axon_binding* bindings,
                                                       size_t binding_count, const void* constants,
                                                       size_t constant_bytes) {
  return guarded_call(__func__, [&] {
    Driver& driver = Driver::running();
    const LoadedExecutable* loaded = Executables::find<LoadedExecutable>(executable);
    require_launch_target(driver.scheduler(), stream, loaded->device, entry_point);
    if (std::strcmp(entry_point, "main") != 0) {
      fail(AXON_ERROR_INVALID_VALUE, "a StableHLO executable's entry point is \"main\", got \"", entry_point, "\"");
    }
    require_bindings(bindings, binding_count);
    std::shared_ptr<Program> program = loaded->program;
    if (binding_count != program->arguments.size() + program->results.size() || constant_bytes != 0) {
      fail(AXON_ERROR_INVALID_VALUE, "@main binds ", program->arguments.size(), " arguments and ",
           program->results.size(), " results and takes no constants, got ", binding_count, " bindings and ",
           constant_bytes, " constant bytes");
    }
    (void)constants;
    std::vector<std::optional<DeviceRange>> ranges;
    for (size_t index = 0; index < binding_count; ++index) {
      const bool is_argument = index < program->arguments.size();
      const ArrayType& type =
          is_argument ? program->arguments[index] : program->results[index - program->arguments.size()];
      if (type.bytes() == 0) {  // an empty array's memory may be null: nothing to find or touch
        ranges.emplace_back();
        continue;
      }
      const std::string role = "binding " + std::to_string(index);
      if (bindings[index].bytes < type.bytes()) {
        fail(AXON_ERROR_INVALID_VALUE, role, " holds ", bindings[index].bytes, " bytes, @main's ",
             is_argument ? "argument" : "result", " needs ", type.bytes());
      }
      auto range = driver.memory().find(bindings[index].device_ptr, type.bytes(), role.c_str());
      if (!range || range->allocation->device != loaded->device) {
        fail(AXON_ERROR_INVALID_VALUE, role, " (", bindings[index].device_ptr, ") is not device memory of device ",
             loaded->device);
      }
      ranges.push_back(std::move(range));
    }
    DeviceWork work{[&driver, program, device = loaded->device, ranges = std::move(ranges)](std::string*) {
      run_launch(driver, *program, device, ranges);
      return AXON_SUCCESS;
    }};
    submit_work(driver.scheduler(), driver.launch_blocking(), stream,
                described(QueueItem{std::move(work), 0, nullptr}, AXON_ACTIVITY_EXECUTABLE, 0, entry_point),
                Completion::asynchronous);
    return AXON_SUCCESS;
  });
}
