// The second eager kernel provider: an ATen call run as a compiled device
// program (a StableHLO executable the driver compiled for the call's exact
// shapes), instead of a host kernel over device memory.
//
// Per call shape (the operator, each tensor's dtype, sizes and strides, every
// other argument's value) the provider asks the registered lowerer once, under the
// GIL (torch_axon/compile/eager_kernels.py builds a one-node graph, lowers
// it with the compile path's table and compiles it through the executable
// caches). The answer is kept: an executable and which of the call's tensors
// it binds, or "no", which sends that call shape to the host kernels. Later
// calls of the shape launch the executable on the current stream without
// entering Python.
//
// Floating values (a learning rate, `x * 0.5`): when the lowerer can make
// them operands of the program, one executable serves every value that is
// finite and not 0 or ±1 (values decompositions may special-case, which
// keep a program of their own), and each launch uploads the values.
// Otherwise each value is its own call shape, up to a few per shape.
//
// Which calls qualify: every tensor argument is a dense axon tensor of the
// call's device (its memory is bound and permuted in the program), no
// generator argument (random ops keep the host's Philox streams), and the
// only mutated argument is an in-place op's `self`, written by the launch
// as the functional op's result. Everything else stays on host kernels.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "axon/executable.h"
#include "core/stream_checks.h"
#include "ops/operator_plan.h"

namespace axon {

enum class EagerKernels {
  kHost,       // host kernels only
  kCompiled,   // compiled kernels first, on every driver
  kAutomatic,  // compiled kernels first where device memory is not host-addressable
};

// AXON_EAGER_KERNELS=host|compiled|auto (default auto), until set_eager_kernels.
EagerKernels eager_kernels();
void set_eager_kernels(EagerKernels mode);

// Whether eager calls on `device` are offered to the compiled kernels first
// (eager_kernels() and the device's memory decide).
bool compiled_kernels_first(c10::Device device);

// A call shape compiles at its N-th call (AXON_EAGER_COMPILE_AFTER, default
// 2); earlier calls run on host kernels. Shapes that occur once (a decode
// loop's growing cache, each new batch length) then never pay a compile,
// while a training loop compiles at its second step.
int eager_compile_after();
void set_eager_compile_after(int calls);

// What the lowerer answers for one call shape.
struct LoweredKernel {
  axon_executable executable = nullptr;  // kept alive by the lowerer for the process's life
  // The executable's arguments, in order: p < (number of the call's tensors)
  // is the call's tensor p (argument order); p beyond is floating value
  // p - (that number) of the call (argument order), bound as a 0-d operand.
  std::vector<int> inputs;
  // Empty: the call's floating values are constants of the program (part of
  // the call shape). Otherwise the dtype of each floating value's operand:
  // one program serves every value.
  std::vector<c10::ScalarType> operand_dtypes;
  // The program's run-time checks (index bounds), whose [checks, 2] table it
  // writes as one more result, reported in stream order
  // (core/stream_checks.h); null when it has none.
  StreamChecks checks;
};

// The lowerer's answer: a kernel, or host kernels for this call shape, or
// host kernels for every call of the operator (no lowering at all).
struct LoweringAnswer {
  std::optional<LoweredKernel> kernel;
  bool decline_operator = false;
};

// (operator, arguments, results to write, device) -> the answer. Called
// with the GIL not held.
using KernelLowerer = std::function<LoweringAnswer(const c10::OperatorHandle&, c10::ArrayRef<c10::IValue>,
                                                   const std::vector<c10::IValue>&, int)>;
void set_kernel_lowerer(KernelLowerer lowerer);

// Launches `op` as a compiled kernel on the current stream of `device`,
// writing `results` (fresh outputs allocated from the meta run, and the
// aliased arguments of in-place ops). False when this call goes to the host
// kernels instead; nothing has been queued then.
bool launch_compiled_kernel(const c10::OperatorHandle& op, const OperatorPlan& plan, c10::ArrayRef<c10::IValue> args,
                            const std::vector<c10::IValue>& results, c10::Device device);

struct CompiledKernelStats {
  int64_t launches = 0;       // calls run as compiled kernels
  int64_t lowered = 0;        // call shapes compiled
  int64_t declined = 0;       // call shapes the lowerer sent to the host kernels
  int64_t not_eligible = 0;   // calls that never asked (strided tensors, generators, out=, ...)
  int64_t cache_full = 0;     // new call shapes refused because the cache holds its limit
  int64_t value_limited = 0;  // new floating values refused: the call shape has its variants
  int64_t deferred = 0;       // calls of a shape not yet seen eager_compile_after() times
};
CompiledKernelStats compiled_kernel_stats();
void reset_compiled_kernel_stats();

}  // namespace axon
