// The Python side of compiled eager kernels (compiled_execution/): the
// lowerer torch_axon registers, the provider's mode and its counters.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <torch/csrc/jit/python/pybind_utils.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "compiled_execution/compiled_kernel.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace axon {
namespace {

// Wraps a Python callable lower(name, overload, args, results, device) ->
// (executable, input positions, operand dtypes, run-time checks as
// (exception class name, message) pairs) | None (not this call
// shape) | False (not this operator) as the provider's lowerer. A
// Python exception declines the call shape (host kernels run it) with one
// warning naming the operator: a lowering bug must not fail a correct call.
KernelLowerer python_lowerer(py::object callable) {
  // Leaked on purpose: the provider may call it until the process ends, after Python's finalization.
  auto* held = new py::object(std::move(callable));
  return [held](const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args, const std::vector<c10::IValue>& results,
                int device) -> LoweringAnswer {
    if (!Py_IsInitialized() || Py_IsFinalizing()) return LoweringAnswer{};  // no Python to ask any more
    py::gil_scoped_acquire gil;
    try {
      py::list py_args;
      for (const c10::IValue& arg : args) {
        const bool number =
            arg.isTensor() && arg.toTensor().defined() && arg.toTensor().unsafeGetTensorImpl()->is_wrapped_number();
        py_args.append(torch::jit::toPyObject(number ? c10::IValue(arg.toTensor().item()) : arg));
      }
      py::list py_results;
      for (const c10::IValue& result : results) py_results.append(torch::jit::toPyObject(result));
      const py::object answer = (*held)(op.schema().name(), op.schema().overload_name(), py_args, py_results, device);
      if (answer.is_none()) return LoweringAnswer{};
      if (py::isinstance<py::bool_>(answer)) return LoweringAnswer{std::nullopt, !answer.cast<bool>()};
      auto [executable, inputs, operands, checks] =
          answer.cast<std::tuple<py::object, std::vector<int>, std::vector<std::string>,
                                 std::vector<std::pair<std::string, std::string>>>>();
      // The cache keeps the driver handle for the life of the process: so does this never-released
      // reference to its owner, even through Python's finalization.
      executable.inc_ref();
      const auto handle = executable.attr("handle").cast<uintptr_t>();
      LoweredKernel kernel{reinterpret_cast<axon_executable>(handle), std::move(inputs), {}};
      for (const std::string& dtype : operands) {
        TORCH_CHECK(dtype == "float32" || dtype == "float64", "[axon] operand dtype must be float32 or float64");
        kernel.operand_dtypes.push_back(dtype == "float32" ? at::kFloat : at::kDouble);
      }
      if (!checks.empty()) kernel.checks = stream_checks(checks);
      return LoweringAnswer{std::move(kernel)};
    } catch (const std::exception& error) {  // a Python exception, or an answer of the wrong shape
      TORCH_WARN("[axon] compiling ", op.schema().name(),
                 " as an eager kernel failed; it runs as a host kernel: ", error.what());
      return LoweringAnswer{};
    }
  };
}

EagerKernels parse_mode(const std::string& text) {
  if (text == "host") return EagerKernels::kHost;
  if (text == "compiled") return EagerKernels::kCompiled;
  if (text == "auto") return EagerKernels::kAutomatic;
  throw py::value_error("eager kernels must be 'host', 'compiled' or 'auto', got '" + text + "'");
}

std::string mode_name(EagerKernels mode) {
  switch (mode) {
    case EagerKernels::kHost:
      return "host";
    case EagerKernels::kCompiled:
      return "compiled";
    case EagerKernels::kAutomatic:
      return "auto";
  }
  return "auto";
}

}  // namespace

void init_compiled_kernels(py::module_& m) {
  m.def("_set_eager_kernel_lowerer",
        [](py::object lowerer) { set_kernel_lowerer(python_lowerer(std::move(lowerer))); });
  m.def("_eager_kernels", [] { return mode_name(eager_kernels()); });
  m.def("_set_eager_kernels", [](const std::string& mode) { set_eager_kernels(parse_mode(mode)); });
  m.def("_compiled_kernel_stats", [] {
    const CompiledKernelStats stats = compiled_kernel_stats();
    py::dict result;
    result["launches"] = stats.launches;
    result["lowered"] = stats.lowered;
    result["declined"] = stats.declined;
    result["not_eligible"] = stats.not_eligible;
    result["cache_full"] = stats.cache_full;
    result["value_limited"] = stats.value_limited;
    result["deferred"] = stats.deferred;
    return result;
  });
  m.def("_reset_compiled_kernel_stats", &reset_compiled_kernel_stats);
  m.def("_eager_compile_after", &eager_compile_after);
  m.def("_set_eager_compile_after", &set_eager_compile_after);
}

}  // namespace axon
