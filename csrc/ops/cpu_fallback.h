// The backend fallback: what runs an operator that has no axon kernel.
//
// By default it runs the operator on the CPU (PyTorch's at::native::
// cpu_fallback: copy the arguments out, run, copy results and mutated
// arguments back to axon), after warning once per operator, and counts it.
// AXON_FALLBACK=error turns any fallback into NotImplementedError naming the
// operator (for proving a program runs natively); AXON_FALLBACK=warn is the
// default. Fallback results are correct and live on axon, but cost a full
// device synchronization and two copies.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace axon {

void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// Operators that fell back in this process, with their call counts.
std::vector<std::pair<std::string, int64_t>> fallback_counts();
void reset_fallback_counts();

// "warn" or "error", as read from AXON_FALLBACK.
std::string fallback_mode();

// How the once-per-operator warning is delivered. The default is TORCH_WARN,
// which reaches Python's warnings module only inside PyTorch's own Python
// bindings; custom operators called through torch.ops would print it as a
// C++ log line instead. torch_axon._C installs a hook that issues a Python
// UserWarning (visible to warnings.catch_warnings, -W error, pytest.warns);
// the hook may throw to turn the warning into the caller's exception.
void set_fallback_warning_hook(std::function<void(const std::string& message)> hook);

}  // namespace axon
