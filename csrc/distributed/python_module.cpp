// torch_axon._C_distributed: the Python face of ProcessGroupAxon.
//
// Built into torch_axon._C's shared library but created on demand by
// torch_axon.distributed (through axon_distributed_module(), loaded with
// ctypes.PyDLL) so that importing torch_axon does not pay for it. Classes
// derive from torch's own pybind11 registrations of c10d::Backend and Store,
// which pybind11 finds through its shared internals.
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "distributed/process_group_axon.h"

namespace py = pybind11;

// torch's bindings hold c10d objects by intrusive_ptr (torch/csrc/utils/pybind.h).
PYBIND11_DECLARE_HOLDER_TYPE(T, c10::intrusive_ptr<T>, true);

namespace axon::distributed {
namespace {

void define_module(py::module_& m) {
  // Make sure torch registered the base classes first.
  py::module_::import("torch._C._distributed_c10d");
  // c10 errors thrown from this library carry this library's type info,
  // which torch's own translator does not recognise: map them here
  // (translators are shared by all pybind11 modules).
  py::register_exception_translator([](std::exception_ptr error) {
    try {
      if (error) std::rethrow_exception(error);
    } catch (const c10::DistBackendError& backend_error) {
      py::object type = py::module_::import("torch.distributed").attr("DistBackendError");
      PyErr_SetString(type.ptr(), backend_error.what());
    } catch (const c10::TypeError& type_error) {
      PyErr_SetString(PyExc_TypeError, type_error.what_without_backtrace());
    } catch (const c10::ValueError& value_error) {
      PyErr_SetString(PyExc_ValueError, value_error.what_without_backtrace());
    }
  });
  py::class_<ProcessGroupAxon, c10d::Backend, c10::intrusive_ptr<ProcessGroupAxon>>(
      m, "ProcessGroupAxon",
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

}  // namespace
}  // namespace axon::distributed

extern "C" __attribute__((visibility("default"))) PyObject* axon_distributed_module() {
  static PyModuleDef definition{};
  try {
    auto m = py::module_::create_extension_module("torch_axon._C_distributed", nullptr, &definition);
    axon::distributed::define_module(m);
    return m.release().ptr();
  } catch (py::error_already_set& error) {
    error.restore();
  } catch (const std::exception& error) {
    PyErr_SetString(PyExc_RuntimeError, error.what());
  }
  return nullptr;
}
