#include "ops/unsupported.h"

namespace axon {

void unsupported_operator(const c10::OperatorHandle& op, torch::jit::Stack* /*stack*/) {
  const auto& name = op.operator_name();
  TORCH_CHECK_NOT_IMPLEMENTED(
      false, "[axon] the operator '", name.name, name.overload_name.empty() ? "" : ".", name.overload_name,
      "' has no axon kernel yet. Run it on CPU explicitly (tensor.cpu()) or report it so it can be added.");
}

}  // namespace axon
