// Bindings for the layouts axon's kernels give their results where PyTorch's
// rule for an out-of-tree device would guess another one. Fake tensors ask
// them while graphs are traced (torch_axon/fake_tensors.py).
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/utils/pybind.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "host_execution/convolution.h"
#include "python/bindings.h"

namespace axon {

void init_result_layouts(pybind11::module_& module) {
  module.def(
      "_convolution_result_format",
      [](const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
         const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation,
         bool transposed, const std::vector<int64_t>& output_padding, int64_t groups) {
        // Called with fake tensors from inside a fake mode's dispatch: the
        // CPU stand-ins it makes must not be routed back to Python.
        const c10::impl::ExcludeDispatchKeyGuard no_python(
            c10::DispatchKeySet({c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot}));
        return convolution_result_format(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                                         groups);
      },
      pybind11::arg("input"), pybind11::arg("weight"), pybind11::arg("bias"), pybind11::arg("stride"),
      pybind11::arg("padding"), pybind11::arg("dilation"), pybind11::arg("transposed"), pybind11::arg("output_padding"),
      pybind11::arg("groups"),
      "The torch.memory_format of axon's (and the CPU's) convolution result and gradients for these arguments; "
      "for torch.contiguous_format they keep the meta kernel's strides.");
}

}  // namespace axon
