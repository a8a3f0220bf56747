// Operators that ran through the CPU fallback: the once-per-operator warning
// (raised as a Python UserWarning at the user's line) and the counts behind
// torch.axon.fallback_ops().
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "ops/cpu_fallback.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace axon {

void init_fallback(py::module_& m) {
  set_fallback_warning_hook([](const std::string& message) {
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    // stacklevel 2: the warning points at the user's line, not torch.ops.
    if (PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 2) < 0) throw py::error_already_set();
  });
  m.def("_fallback_counts", &fallback_counts);
  m.def("_reset_fallback_counts", &reset_fallback_counts);
  m.def("_fallback_mode", &fallback_mode);
}

}  // namespace axon
