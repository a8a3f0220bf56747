// One translator for every binding of torch_axon._C. c10 errors thrown from
// this library carry this library's copy of their type information, which
// torch's own translator does not recognise, so every c10 error type a
// binding can raise is mapped here, most derived first.
#include <pybind11/pybind11.h>

#include <c10/util/Exception.h>

#include "python/bindings.h"

namespace py = pybind11;

namespace axon {
namespace {

void raise_as(const char* module, const char* type, const char* message) {
  py::object python_type = py::module_::import(module).attr(type);
  PyErr_SetString(python_type.ptr(), message);
}

}  // namespace

void init_exception_translation(py::module_&) {
  py::register_exception_translator([](std::exception_ptr error) {
    try {
      if (error) std::rethrow_exception(error);
    } catch (const c10::OutOfMemoryError& e) {
      raise_as("torch", "OutOfMemoryError", e.what_without_backtrace());
    } catch (const c10::DistBackendError& e) {
      raise_as("torch.distributed", "DistBackendError", e.what());
    } catch (const c10::IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what_without_backtrace());
    } catch (const c10::ValueError& e) {
      PyErr_SetString(PyExc_ValueError, e.what_without_backtrace());
    } catch (const c10::TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what_without_backtrace());
    } catch (const c10::NotImplementedError& e) {
      PyErr_SetString(PyExc_NotImplementedError, e.what_without_backtrace());
    } catch (const c10::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what_without_backtrace());
    }
  });
}

}  // namespace axon
