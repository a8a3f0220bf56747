// torch_axon._C._distributed: the Python face of ProcessGroupAxon. Its class
// derives from torch's own pybind11 registrations of c10d::Backend, which
// pybind11 finds through its shared internals (torch registers them when
// torch._C loads, before this module).
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "distributed/process_group_axon.h"
#include "python/bindings.h"

namespace py = pybind11;

// torch's bindings hold c10d objects by intrusive_ptr (torch/csrc/utils/pybind.h).
PYBIND11_DECLARE_HOLDER_TYPE(T, c10::intrusive_ptr<T>, true);

namespace axon {

void init_distributed(py::module_& m) {
  using distributed::ProcessGroupAxon;
  // The base class must be registered first: torch.distributed's import does it.
  py::module_::import("torch.distributed");
  py::module_ distributed =
      m.def_submodule("_distributed", "ProcessGroupAxon, the c10d backend torch_axon.distributed registers");
  py::class_<ProcessGroupAxon, c10d::Backend, c10::intrusive_ptr<ProcessGroupAxon>>(
      distributed, "ProcessGroupAxon",
      "c10d backend for axon tensors; moves bytes with the given transport backend (ProcessGroupGloo)")
      .def(py::init([](int rank, int size, std::chrono::milliseconds timeout,
                       const c10::intrusive_ptr<c10d::Backend>& transport) {
             return c10::make_intrusive<ProcessGroupAxon>(rank, size, timeout, transport);
           }),
           py::arg("rank"), py::arg("size"), py::arg("timeout"), py::arg("transport"),
           py::call_guard<py::gil_scoped_release>())
      // split_group deep-copies `options` to pass them back to split();
      // None lets every backend of the group use its own.
      .def_property_readonly("options", [](ProcessGroupAxon&) { return py::none(); })
      // NCCL's ncclCommSplit needs non-members to take part; Gloo's split
      // is a rendezvous among members only, so there is nothing to do.
      .def("perform_nocolor_split", [](ProcessGroupAxon&, const py::object&) {})
      .def_property_readonly("transport", [](ProcessGroupAxon& group) { return group.transport_handle(); });
}

}  // namespace axon
