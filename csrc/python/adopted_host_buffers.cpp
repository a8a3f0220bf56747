// Bindings for host_execution/adopted_host_buffers.h. Tensors cross through torch's own pybind
// caster (torch/csrc/utils/pybind.h), hence the link against torch_python.
#include <torch/csrc/utils/pybind.h>

#include "core/device.h"
#include "host_execution/adopted_host_buffers.h"
#include "python/bindings.h"

namespace axon {

void init_adopted_host_buffers(pybind11::module_& module) {
  module.def(
      "_adopt_host_tensor",
      [](const at::Tensor& cpu_tensor, int64_t device_index) {
        check_device_index(device_index);  // before narrowing to c10::DeviceIndex
        return adopt_host_tensor(cpu_tensor, static_cast<c10::DeviceIndex>(device_index));
      },
      pybind11::arg("cpu_tensor"), pybind11::arg("device_index"),
      "An axon tensor on device `device_index` over the same bytes as `cpu_tensor` (no copy); "
      "it keeps the CPU storage alive.");
  module.def("_host_alias", &owning_host_alias, pybind11::arg("axon_tensor"),
             "A CPU tensor over the same bytes as `axon_tensor` (no copy, no synchronization); "
             "it keeps the axon storage alive.");
}

}  // namespace axon
