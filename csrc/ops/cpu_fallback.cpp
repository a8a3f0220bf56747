#include "ops/cpu_fallback.h"

#include <ATen/native/CPUFallback.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>

#include "core/check.h"
#include "core/host_waits.h"
#include "core/stream.h"
#include "ops/argument_tensors.h"

namespace axon {
namespace {

enum class Mode { kWarn, kError };

Mode read_mode() {
  const char* value = std::getenv("AXON_FALLBACK");
  if (value == nullptr || value[0] == '\0' || std::string(value) == "warn") return Mode::kWarn;
  if (std::string(value) == "error") return Mode::kError;
  TORCH_CHECK_VALUE(false, "[axon] AXON_FALLBACK must be 'warn' or 'error', got '", value, "'");
}

Mode mode() {
  static const Mode cached = read_mode();
  return cached;
}

std::mutex counts_mutex;
std::map<std::string, int64_t> counts;
std::function<void(const std::string&)> warning_hook;  // set once, at module load

std::string operator_name(const c10::OperatorHandle& op) {
  const auto& name = op.operator_name();
  return name.overload_name.empty() ? name.name : name.name + "." + name.overload_name;
}

// Drains the streams the arguments live on: the CPU reads their memory next.
void synchronize_argument_devices(c10::ArrayRef<c10::IValue> args) {
  std::vector<c10::DeviceIndex> done;
  for (const auto& arg : args) {
    for_each_tensor(arg, [&](const at::Tensor& tensor) {
      if (!tensor.defined() || !tensor.is_privateuseone()) return;
      const auto device = tensor.device().index();
      if (std::find(done.begin(), done.end(), device) != done.end()) return;
      done.push_back(device);
      AXON_CHECK(wait_for_stream(current_stream_handle(device)), "synchronizing before a CPU fallback");
    });
  }
}

}  // namespace

void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const std::string name = operator_name(op);
  TORCH_CHECK_NOT_IMPLEMENTED(
      mode() != Mode::kError, "[axon] the operator '", name,
      "' has no axon kernel, and AXON_FALLBACK=error forbids running it on the CPU. Unset AXON_FALLBACK "
      "to let it fall back, or add an axon kernel (docs/adding_an_operator.md).");
  bool first_time = false;
  {
    std::lock_guard<std::mutex> lock(counts_mutex);
    first_time = counts[name]++ == 0;
  }
  if (first_time) {
    const std::string message =
        "[axon] the operator '" + name +
        "' has no axon kernel yet and ran on the CPU (with copies to and from the device). Results are "
        "correct but slower; torch.axon.fallback_ops() lists such operators, AXON_FALLBACK=error makes "
        "them errors. See docs/adding_an_operator.md.";
    if (warning_hook) {
      warning_hook(message);
    } else {
      TORCH_WARN(message);
    }
  }
  const size_t num_args = op.schema().arguments().size();
  synchronize_argument_devices(torch::jit::last(*stack, num_args));
  at::native::cpu_fallback(op, stack);
}

void set_fallback_warning_hook(std::function<void(const std::string& message)> hook) { warning_hook = std::move(hook); }

std::vector<std::pair<std::string, int64_t>> fallback_counts() {
  std::lock_guard<std::mutex> lock(counts_mutex);
  return {counts.begin(), counts.end()};
}

void reset_fallback_counts() {
  std::lock_guard<std::mutex> lock(counts_mutex);
  counts.clear();
}

std::string fallback_mode() { return mode() == Mode::kError ? "error" : "warn"; }

}  // namespace axon
