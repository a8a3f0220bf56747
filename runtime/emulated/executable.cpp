// Entry points (common/driver_table.h puts them in the table): executables.
//
// Two formats: "host-shared-object" (native code: the image is written to an
// anonymous file, a memfd, and dlopened from there, so nothing touches the
// file system) and "stablehlo-mlir" with its compiled image "xla-cpu-executable"
// (stablehlo_program.h). A launch checks its entry point and bindings at once,
// then queues a host function that runs the program over the bindings' host
// views; the program stays loaded while the handle or any queued launch holds it.

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "axon/executable.h"
#include "axon/formats/host_shared_object.h"
#include "axon/formats/stablehlo.h"
#include "boundary.h"
#include "device_range.h"
#include "driver.h"
#include "executable_arguments.h"
#include "executable_registry.h"
#include "loaded_program.h"
#include "stablehlo_program.h"
#include "submission.h"

using namespace axon::common;

using namespace axon::emulated;

namespace {

using EntryPoint = int (*)(const axon_host_dispatch* dispatch, char* message);

// A loaded shared object, closed when the last handle or launch lets go.
class HostSharedObject final : public LoadedProgram {
 public:
  explicit HostSharedObject(void* handle) : handle_(handle) {}
  ~HostSharedObject() override { dlclose(handle_); }
  HostSharedObject(const HostSharedObject&) = delete;
  HostSharedObject& operator=(const HostSharedObject&) = delete;

  const void* entry(const char* name, size_t, size_t) const override {
    void* symbol = dlsym(handle_, name);
    if (symbol == nullptr) fail(AXON_ERROR_INVALID_VALUE, "the executable exports no entry point named \"", name, "\"");
    return symbol;
  }

  bool run(const void* entry, const axon_host_dispatch& dispatch, char* message) const override {
    return reinterpret_cast<EntryPoint>(const_cast<void*>(entry))(&dispatch, message) == 0;
  }

 private:
  void* handle_;
};

}  // namespace

std::string LoadedProgram::serialize(const char**) const {
  fail(AXON_ERROR_NOT_SUPPORTED, "this executable has no image other than the one it was loaded from");
}

namespace {

struct LoadedExecutable final : axon_executable_object {
  using axon_executable_object::axon_executable_object;
  std::shared_ptr<LoadedProgram> program;
};

using Executables = ExecutableRegistry<Driver>;

std::shared_ptr<LoadedProgram> load_shared_object(const void* image, size_t bytes) {
  static constexpr char kElfMagic[] = {0x7f, 'E', 'L', 'F'};
  if (bytes < sizeof(kElfMagic) || std::memcmp(image, kElfMagic, sizeof(kElfMagic)) != 0) {
    fail(AXON_ERROR_INVALID_VALUE, "expected an ELF shared object (", AXON_FORMAT_HOST_SHARED_OBJECT, " format), got ",
         bytes, " bytes that do not start with the ELF magic");
  }
  const int fd = memfd_create("axon-executable", MFD_CLOEXEC);
  if (fd < 0) fail(AXON_ERROR_SYSTEM, "memfd_create failed: ", std::strerror(errno));
  struct CloseOnExit {
    int fd;
    ~CloseOnExit() { close(fd); }
  } close_on_exit{fd};
  for (size_t written = 0; written < bytes;) {
    const ssize_t step = write(fd, static_cast<const char*>(image) + written, bytes - written);
    if (step < 0) fail(AXON_ERROR_SYSTEM, "writing the executable image failed: ", std::strerror(errno));
    written += static_cast<size_t>(step);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    fail(AXON_ERROR_INVALID_VALUE, "the shared object does not load: ", why != nullptr ? why : "(no reason given)");
  }
  return std::make_shared<HostSharedObject>(handle);
}

// What one launch needs on the worker; owned by its host function.
struct Dispatch {
  std::shared_ptr<LoadedProgram> program;
  const void* entry = nullptr;
  std::vector<void*> bindings;
  std::vector<size_t> binding_bytes;
  std::vector<unsigned char> constants;
};

axon_status run_dispatch(void* user_data, char* message) {
  const auto* dispatch = static_cast<const Dispatch*>(user_data);
  const axon_host_dispatch arguments{
      dispatch->bindings.data(), dispatch->binding_bytes.data(), dispatch->bindings.size(),
      dispatch->constants.empty() ? nullptr : dispatch->constants.data(), dispatch->constants.size()};
  if (dispatch->program->run(dispatch->entry, arguments, message)) return AXON_SUCCESS;
  if (message[0] == '\0') std::snprintf(message, AXON_TASK_MESSAGE_CAPACITY, "the executable failed without a message");
  return AXON_ERROR_TASK_FAILED;
}

void release_dispatch(void* user_data) { delete static_cast<Dispatch*>(user_data); }

}  // namespace

template <>
axon_status EntryPoints::axon_executable_format_supported(int device, const char* format, int* supported) {
  return guarded_call(__func__, [&] {
    Driver::running().require_device(device);
    require_output(supported, "supported");
    if (format == nullptr) fail(AXON_ERROR_INVALID_VALUE, "expected a format name, got null");
    const bool xla =
        std::strcmp(format, AXON_FORMAT_STABLEHLO) == 0 || std::strcmp(format, AXON_EMULATED_FORMAT_XLA_CPU) == 0;
    *supported = std::strcmp(format, AXON_FORMAT_HOST_SHARED_OBJECT) == 0 || (xla && stablehlo_supported()) ? 1 : 0;
    return AXON_SUCCESS;
  });
}

template <>
axon_status EntryPoints::axon_executable_load(int device, const char* format, const void* image, size_t image_bytes,
                                              axon_executable* executable) {
  return guarded_call(__func__, [&] {
    Driver::running().require_device(device);
    require_output(executable, "executable");
    if (image == nullptr) fail(AXON_ERROR_INVALID_VALUE, "expected an image, got null");
    auto loaded = std::make_unique<LoadedExecutable>(device);
    if (format != nullptr && std::strcmp(format, AXON_FORMAT_HOST_SHARED_OBJECT) == 0) {
      loaded->program = load_shared_object(image, image_bytes);
    } else if (format != nullptr && std::strcmp(format, AXON_FORMAT_STABLEHLO) == 0) {
      loaded->program = load_stablehlo(std::string(static_cast<const char*>(image), image_bytes));
    } else if (format != nullptr && std::strcmp(format, AXON_EMULATED_FORMAT_XLA_CPU) == 0) {
      loaded->program = load_xla_cpu_image(std::string(static_cast<const char*>(image), image_bytes));
    } else {
      fail(AXON_ERROR_NOT_SUPPORTED, "expected format \"", AXON_FORMAT_HOST_SHARED_OBJECT, "\", \"",
           AXON_FORMAT_STABLEHLO, "\" or \"", AXON_EMULATED_FORMAT_XLA_CPU, "\", got ",
           format == nullptr ? "null" : format);
    }
    *executable = Executables::adopt(std::move(loaded));
    return AXON_SUCCESS;
  });
}

template <>
axon_status EntryPoints::axon_executable_serialize(axon_executable executable, const char** format, void* image,
                                                   size_t capacity, size_t* image_bytes) {
  return guarded_call(__func__, [&] {
    require_output(format, "format");
    require_output(image_bytes, "image_bytes");
    copy_image_out(Executables::find<LoadedExecutable>(executable)->program->serialize(format), image, capacity,
                   image_bytes);
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
    require_bindings(bindings, binding_count);
    if (constant_bytes > 0 && constants == nullptr) {
      fail(AXON_ERROR_INVALID_VALUE, "expected ", constant_bytes, " constant bytes, got a null pointer");
    }
    auto dispatch = std::make_unique<Dispatch>();
    dispatch->program = loaded->program;
    dispatch->entry = loaded->program->entry(entry_point, binding_count, constant_bytes);
    for (size_t index = 0; index < binding_count; ++index) {
      if (bindings[index].bytes == 0) {  // an empty tensor's memory may be null: nothing to find or touch
        dispatch->bindings.push_back(nullptr);
        dispatch->binding_bytes.push_back(0);
        continue;
      }
      const std::string role = "binding " + std::to_string(index);
      const auto range = find_device_range(driver, bindings[index].device_ptr, bindings[index].bytes, role.c_str());
      if (!range || range->device != loaded->device) {
        fail(AXON_ERROR_INVALID_VALUE, role, " (", bindings[index].device_ptr, ") is not device memory of device ",
             loaded->device);
      }
      dispatch->bindings.push_back(range->host_address);
      dispatch->binding_bytes.push_back(bindings[index].bytes);
    }
    const auto* constant_data = static_cast<const unsigned char*>(constants);
    dispatch->constants.assign(constant_data, constant_data + constant_bytes);
    OwnedTask task(axon_host_function{&run_dispatch, &release_dispatch, dispatch.release()});
    submit_work(driver.scheduler(), driver.launch_blocking(), stream,
                described(QueueItem{std::move(task), 0, nullptr}, AXON_ACTIVITY_EXECUTABLE, 0, entry_point),
                Completion::asynchronous);
    return AXON_SUCCESS;
  });
}
