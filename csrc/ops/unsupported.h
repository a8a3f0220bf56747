// The backend fallback: reached by operators that have no axon kernel.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

namespace axon {

// Raises NotImplementedError naming the operator.
void unsupported_operator(const c10::OperatorHandle& op, torch::jit::Stack* stack);

}  // namespace axon
