#include "host_execution/stream_launch.h"

#include <ATen/core/LegacyTypeDispatch.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <cstdio>
#include <exception>
#include <string>

#include "core/check.h"
#include "profiler/device_activity.h"

namespace axon {
namespace {

// The task status naming `error`'s kind, so that the error raised at
// synchronization has the CPU kernel's Python type (see core/check.cpp).
axon_status failure_status(const c10::Error& error) {
  if (dynamic_cast<const c10::IndexError*>(&error)) return AXON_ERROR_TASK_OUT_OF_RANGE;
  if (dynamic_cast<const c10::ValueError*>(&error)) return AXON_ERROR_TASK_INVALID_ARGUMENT;
  if (dynamic_cast<const c10::TypeError*>(&error)) return AXON_ERROR_TASK_WRONG_TYPE;
  if (dynamic_cast<const c10::NotImplementedError*>(&error)) return AXON_ERROR_TASK_UNSUPPORTED;
  if (dynamic_cast<const c10::LinAlgError*>(&error)) return AXON_ERROR_TASK_NUMERICAL;
  return AXON_ERROR_TASK_FAILED;
}

struct KernelLaunch {
  std::string kernel_name;
  std::function<void()> body;
};

axon_status run_kernel(void* user_data, char* message) {
  auto* launch = static_cast<KernelLaunch*>(user_data);
  try {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    launch->body();
    return AXON_SUCCESS;
  } catch (const c10::Error& error) {
    std::snprintf(message, AXON_TASK_MESSAGE_CAPACITY, "%s: %s", launch->kernel_name.c_str(),
                  error.what_without_backtrace());
    return failure_status(error);
  } catch (const std::exception& error) {
    std::snprintf(message, AXON_TASK_MESSAGE_CAPACITY, "%s: %s", launch->kernel_name.c_str(), error.what());
  } catch (...) {
    std::snprintf(message, AXON_TASK_MESSAGE_CAPACITY, "%s: unknown exception", launch->kernel_name.c_str());
  }
  return AXON_ERROR_TASK_FAILED;
}

void release_kernel(void* user_data) { delete static_cast<KernelLaunch*>(user_data); }

}  // namespace

void launch_on_stream(axon_stream stream, const char* kernel_name, std::function<void()> body) {
  auto* launch = new KernelLaunch{kernel_name, std::move(body)};
  const axon_host_function task{&run_kernel, &release_kernel, launch};
  if (device_activity_recording()) {
    // The profiler's device row names the kernel; built only while one records.
    const std::string label = std::string("host_kernel<") + kernel_name + ">";
    axon_activity_set_label(label.c_str());
    const axon_status status = axon_stream_launch_host_function(stream, task);
    axon_activity_set_label(nullptr);
    AXON_CHECK(status, kernel_name);
    return;
  }
  // The driver owns `launch` from here on, even if the launch fails.
  AXON_CHECK(axon_stream_launch_host_function(stream, task), kernel_name);
}

void launch_on_stream(axon_stream stream, const char* kernel_name, HostAliases& aliases, std::function<void()> body) {
  aliases.stage_in(stream);
  launch_on_stream(stream, kernel_name, std::move(body));
  aliases.stage_out(stream);
}

}  // namespace axon
