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

}  // namespace axon
