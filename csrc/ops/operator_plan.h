// How the generic kernel executes one operator, decided once per operator
// from its schema: which returns alias which arguments, whether a CPU `.out`
// overload can write straight into freshly allocated outputs, whether the
// result depends on data, and which argument is a random generator.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <optional>
#include <string>
#include <vector>

namespace axon {

enum class Strategy {
  kOutVariant,   // functional op: its CPU `.out` kernel writes into fresh outputs
  kInPlace,      // every return aliases a mutable argument (in-place, out=)
  kCopyBack,     // CPU op runs on the stream, building its results in the outputs where it can, else copied
  kSynchronous,  // shape or result depends on data: drain stream, run now
};

struct OperatorPlan {
  std::string name;  // "aten::add.Tensor"
  Strategy strategy = Strategy::kCopyBack;
  std::optional<c10::OperatorHandle> out_operator;
  // For each return: the argument it aliases (in-place / out=), or -1.
  std::vector<int> return_argument;
  std::vector<bool> argument_is_mutable;
  // The arguments the CPU kernel writes: the mutable ones, and those a few
  // schemas write without saying so (batch norm's running statistics). A
  // storage shared with a lazy clone gets memory of its own before such a
  // call (core/copy_on_write.h).
  std::vector<bool> argument_is_written;
  int generator_argument = -1;
  // The argument of indexing operators (index, index_put_, index_fill_, ...)
  // whose CPU tensors are moved to the device, as CUDA moves CPU indices;
  // -1 for other operators.
  int host_index_argument = -1;
  // The arguments the schema types `Tensor?[]` (index, index_put_, ...): the
  // ones TorchScript may pass as untyped lists (see ops/argument_tensors.h).
  std::vector<int> optional_tensor_list_arguments;
  // Run with the worker's OpenMP team at any size (launch_on_stream): CPU
  // kernels whose work is far above the bytes they cover (transcendental
  // element-wise functions, topk, scans, LAPACK and FFT calls; the list and
  // its measurements: runs_with_team_at_any_size, operator_plan.cpp).
  bool team_at_any_size = false;
  // For matrix products (mm, bmm, mv, and addmm, baddbmm, addbmm, addmv, in place or not): the argument index
  // of the first factor, the second following it; -1 for other operators.
  // Such a call runs with the team where its sizes ask for it
  // (product_wants_team, host_execution/matrix_products.h).
  int product_first_factor = -1;
  // Set when the op cannot run through the generic kernel (view results).
  std::string unsupported_reason;
};

// The plan of `op`, computed on first use and cached (thread-safe).
const OperatorPlan& plan_for(const c10::OperatorHandle& op);

// Builds, at import, the tables every operator's first plan reads (the
// dispatcher's overloads by name, the native meta kernels): about 1 ms that
// the process's first operator call paid otherwise.
void prepare_operator_plans();

}  // namespace axon
