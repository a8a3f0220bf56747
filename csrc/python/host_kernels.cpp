// Bindings for host_execution/compiled_host_kernel.h: the launch that
// Inductor's generated wrapper code calls for each C++ kernel on axon
// (torch_axon/inductor/). Arguments arrive as the wrapper passes them to a
// CPU kernel: tensors, ints and floats, in the kernel's order.
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

#include <cstdint>
#include <string>
#include <vector>

#include "host_execution/compiled_host_kernel.h"
#include "python/bindings.h"

namespace axon {
namespace {

HostKernelValue to_kernel_value(const pybind11::handle& object) {
  if (THPVariable_Check(object.ptr())) return THPVariable_Unpack(object.ptr());
  if (PyFloat_Check(object.ptr())) return object.cast<double>();
  return object.cast<std::int64_t>();  // ints, bools and SymInts already made concrete
}

}  // namespace

void init_host_kernels(pybind11::module_& module) {
  module.def(
      "_launch_host_kernel",
      [](std::uintptr_t entry, const std::string& kernel_name, const std::string& kinds, const pybind11::tuple& args) {
        std::vector<HostKernelValue> values;
        values.reserve(args.size());
        for (const auto& arg : args) values.push_back(to_kernel_value(arg));
        pybind11::gil_scoped_release no_gil;
        launch_host_kernel(reinterpret_cast<HostKernelEntry>(entry), kernel_name, kinds, values);
      },
      pybind11::arg("entry"), pybind11::arg("kernel_name"), pybind11::arg("kinds"), pybind11::arg("args"),
      "Queues a compiled host kernel's slot entry point on the current stream of its tensors' axon device. "
      "`kinds` has one letter per argument: r (read tensor), w (written tensor), i (int64), f (float).");
}

}  // namespace axon
