// torch_axon._C.Executable: a driver executable, loaded from an image and
// launched on a device's current stream with axon tensors as its bindings.
// The compile path (torch_axon/compile) runs its graphs through it.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "axon/executable.h"
#include "core/check.h"
#include "core/copy_on_write.h"
#include "core/device.h"
#include "core/stream.h"
#include "core/stream_checks.h"
#include "host_execution/compiled_code_cores.h"
#include "profiler/device_activity.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace axon {
namespace {

class Executable {
 public:
  Executable(int device, const std::string& format, const py::bytes& image) : device_(device) {
    check_device_index(device);
    free_cores_for_compiled_code(format.c_str());
    std::string bytes = image;
    py::gil_scoped_release no_gil;  // compiling can take seconds: other Python threads go on
    AXON_CHECK(axon_executable_load(device, format.c_str(), bytes.data(), bytes.size(), &handle_),
               "loading an executable");
  }
  ~Executable() {
    if (handle_ != nullptr) axon_executable_destroy(handle_);  // queued launches keep the program alive
  }
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  int device() const { return device_; }
  // The driver's handle, for compiled eager kernels (compiled_execution/), which launch it from C++.
  uintptr_t handle() const { return reinterpret_cast<uintptr_t>(handle_); }

  // (format, image): the driver's compiled image, loadable without compiling.
  std::pair<std::string, py::bytes> serialize() const {
    const char* format = nullptr;
    size_t bytes = 0;
    AXON_CHECK(axon_executable_serialize(handle_, &format, nullptr, 0, &bytes), "serializing an executable");
    std::string image(bytes, '\0');
    AXON_CHECK(axon_executable_serialize(handle_, &format, image.data(), image.size(), &bytes),
               "serializing an executable");
    return {std::string(format), py::bytes(image)};
  }

  // Queues `entry_point` on the device's current stream with each tensor's
  // memory as one binding, in order, and returns without waiting. The tensors
  // must be dense axon tensors of this device; like any kernel's operands they
  // are used in stream order (another stream's use needs record_stream).
  // `label` names the launch on a profile's device row (a compiled
  // partition's name), under the host range axon::launch_executable.
  void launch(const std::vector<at::Tensor>& tensors, const std::string& entry_point, const std::string& label) const {
    std::vector<axon_binding> bindings;
    bindings.reserve(tensors.size());
    for (size_t index = 0; index < tensors.size(); ++index) {
      const at::Tensor& tensor = tensors[index];
      TORCH_CHECK(tensor.device().type() == c10::DeviceType::PrivateUse1 && tensor.device().index() == device_,
                  "executable binding ", index, " must be a tensor on axon:", device_, ", got one on ",
                  tensor.device());
      TORCH_CHECK(tensor.is_contiguous() && !tensor.is_conj() && !tensor.is_neg(), "executable binding ", index,
                  " must be dense row-major");
      materialize_for_write(tensor.storage());  // any binding may be written
      bindings.push_back(axon_binding{tensor.data_ptr(), tensor.nbytes()});
    }
    launch_bindings(bindings, entry_point.c_str(), label);
  }

  // `launch` for bindings already checked.
  void launch_bindings(const std::vector<axon_binding>& bindings, const char* entry_point,
                       const std::string& label) const {
    RECORD_FUNCTION("axon::launch_executable", std::vector<c10::IValue>());
    axon_stream stream = current_stream_handle(static_cast<c10::DeviceIndex>(device_));
    const ActivityLabelScope named([&] { return label; });
    AXON_CHECK(
        axon_stream_launch_executable(stream, handle_, entry_point, bindings.data(), bindings.size(), nullptr, 0),
        "launching an executable");
  }

 private:
  int device_;
  axon_executable handle_ = nullptr;
};

// The run-time checks of one executable (torch_axon/compile/compiled_partition.py), reported in stream order
// (core/stream_checks.h): built once from (exception class name, message) pairs, called with each launch's table.
class CheckReport {
 public:
  explicit CheckReport(const std::vector<std::pair<std::string, std::string>>& checks)
      : checks_(stream_checks(checks)) {}
  void operator()(const at::Tensor& table) const { report_checks_in_stream_order(table, checks_); }
  size_t size() const { return checks_->size(); }

 private:
  StreamChecks checks_;
};

// The common call of a compiled partition (torch_axon/compile/compiled_partition.py), checked and launched
// without Python: its arguments match one specialization exactly (row-major tensors of its sizes and dtypes on
// its device, equal Python numbers), its results are new row-major tensors, and each of the graph's outputs is
// a result or an argument. A call returns the outputs (one object, or a tuple), or None when the arguments do
// not match, and the caller takes its general path. For a small graph this bookkeeping in Python cost more
// than the launch itself.
class DirectLaunch {
 public:
  // `arguments`: per argument, ("tensor", sizes, dtype) or ("number", value); `results`: (sizes, dtype) per
  // executable result; `outputs`: ("result", k) or ("argument", i) per graph output; `single`: the graph
  // returns its one output alone, not in a tuple; `checks`: the CheckReport of the executable's run-time checks,
  // whose table is its last result, or None.
  DirectLaunch(py::object executable, const py::list& arguments, std::vector<int64_t> tensor_inputs,
               const py::list& results, const py::list& outputs, bool single, std::string label, py::object checks)
      : executable_object_(std::move(executable)),
        executable_(executable_object_.cast<const Executable*>()),
        checks_object_(std::move(checks)),
        checks_(checks_object_.is_none() ? nullptr : checks_object_.cast<const CheckReport*>()),
        device_(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(executable_->device())),
        tensor_inputs_(std::move(tensor_inputs)),
        single_(single),
        label_(std::move(label)) {
    for (const py::handle argument : arguments) {
      const auto spec = argument.cast<py::tuple>();
      if (spec[0].cast<std::string>() == "tensor") {
        arguments_.push_back(
            Argument{true, spec[1].cast<std::vector<int64_t>>(), spec[2].cast<at::ScalarType>(), py::none()});
      } else {
        arguments_.push_back(
            Argument{false, {}, at::ScalarType::Undefined, py::reinterpret_borrow<py::object>(spec[1])});
      }
    }
    for (const int64_t position : tensor_inputs_) {
      TORCH_CHECK(position >= 0 && position < static_cast<int64_t>(arguments_.size()) && arguments_[position].tensor,
                  "DirectLaunch: tensor input ", position, " is not a tensor argument");
    }
    for (const py::handle result : results) {
      const auto spec = result.cast<py::tuple>();
      results_.push_back(Result{spec[0].cast<std::vector<int64_t>>(), spec[1].cast<at::ScalarType>()});
    }
    for (const py::handle output : outputs) {
      const auto spec = output.cast<py::tuple>();
      const bool from_result = spec[0].cast<std::string>() == "result";
      const auto index = spec[1].cast<int64_t>();
      TORCH_CHECK(index >= 0 && index < static_cast<int64_t>(from_result ? results_.size() : arguments_.size()),
                  "DirectLaunch: output index ", index, " out of range");
      outputs_.emplace_back(from_result, index);
    }
    TORCH_CHECK(!single_ || outputs_.size() == 1, "DirectLaunch: a single output needs exactly one");
    if (checks_ != nullptr) results_.push_back(Result{{static_cast<int64_t>(checks_->size()), 2}, at::kLong});
  }

  py::object operator()(const py::args& args) const {
    if (args.size() != arguments_.size() || !matches(args)) return py::none();
    std::vector<at::Tensor> results;
    results.reserve(results_.size());
    std::vector<axon_binding> bindings;
    bindings.reserve(tensor_inputs_.size() + results_.size());
    for (const int64_t position : tensor_inputs_) {
      const at::Tensor& tensor = THPVariable_Unpack(args[position].ptr());
      materialize_for_write(tensor.storage());  // on the tensor's device, before its pointer is taken
      bindings.push_back(axon_binding{tensor.data_ptr(), tensor.nbytes()});
    }
    for (const Result& result : results_) {
      results.push_back(at::empty(result.sizes, at::TensorOptions().dtype(result.dtype).device(device_)));
      bindings.push_back(axon_binding{results.back().data_ptr(), results.back().nbytes()});
    }
    executable_->launch_bindings(bindings, "main", label_);
    if (checks_ != nullptr) (*checks_)(results.back());
    if (single_) return output(args, results, outputs_[0]);
    py::tuple delivered(outputs_.size());
    for (size_t index = 0; index < outputs_.size(); ++index) delivered[index] = output(args, results, outputs_[index]);
    return delivered;
  }

 private:
  struct Argument {
    bool tensor;
    std::vector<int64_t> sizes;
    at::ScalarType dtype;
    py::object value;  // a number argument's value
  };
  struct Result {
    std::vector<int64_t> sizes;
    at::ScalarType dtype;
  };

  bool matches(const py::args& args) const {
    for (size_t index = 0; index < arguments_.size(); ++index) {
      const Argument& expected = arguments_[index];
      PyObject* given = args[index].ptr();
      if (!expected.tensor) {
        if (THPVariable_Check(given)) return false;  // before comparing: a tensor's == would launch an op
        const int equal = PyObject_RichCompareBool(given, expected.value.ptr(), Py_EQ);
        if (equal < 0) PyErr_Clear();
        if (equal != 1) return false;
        continue;
      }
      if (!THPVariable_Check(given)) return false;
      const at::Tensor& tensor = THPVariable_Unpack(given);
      if (tensor.device() != device_ || tensor.layout() != at::kStrided || tensor.scalar_type() != expected.dtype ||
          tensor.sizes() != c10::IntArrayRef(expected.sizes) || !tensor.is_contiguous() || tensor.is_conj() ||
          tensor.is_neg()) {
        return false;
      }
    }
    return true;
  }

  static py::object output(const py::args& args, const std::vector<at::Tensor>& results,
                           const std::pair<bool, int64_t>& source) {
    if (source.first) return py::reinterpret_steal<py::object>(THPVariable_Wrap(results[source.second]));
    return py::reinterpret_borrow<py::object>(args[source.second]);
  }

  py::object executable_object_;  // keeps the executable alive
  const Executable* executable_;
  py::object checks_object_;  // keeps the check report alive
  const CheckReport* checks_;
  c10::Device device_;
  std::vector<Argument> arguments_;
  std::vector<int64_t> tensor_inputs_;
  std::vector<Result> results_;
  std::vector<std::pair<bool, int64_t>> outputs_;
  bool single_;
  std::string label_;
};

}  // namespace

void init_executables(py::module_& m) {
  py::class_<Executable>(m, "Executable")
      .def(py::init<int, const std::string&, const py::bytes&>(), py::arg("device"), py::arg("format"),
           py::arg("image"))
      .def_property_readonly("device", &Executable::device)
      .def_property_readonly("handle", &Executable::handle)
      .def("serialize", &Executable::serialize)
      .def("launch", &Executable::launch, py::arg("tensors"), py::arg("entry_point") = "main", py::arg("label") = "");
  py::class_<DirectLaunch>(m, "DirectLaunch")
      .def(py::init<py::object, const py::list&, std::vector<int64_t>, const py::list&, const py::list&, bool,
                    std::string, py::object>(),
           py::arg("executable"), py::arg("arguments"), py::arg("tensor_inputs"), py::arg("results"),
           py::arg("outputs"), py::arg("single"), py::arg("label"), py::arg("checks") = py::none())
      .def("__call__", &DirectLaunch::operator());
  py::class_<CheckReport>(m, "CheckReport")
      .def(py::init<const std::vector<std::pair<std::string, std::string>>&>(), py::arg("checks"))
      .def("__call__", &CheckReport::operator(), py::arg("table"));
}

}  // namespace axon
