// torch_axon._C.Executable: a driver executable, loaded from an image and
// launched on a device's current stream with axon tensors as its bindings.
// The compile path (torch_axon/compile) runs its graphs through it.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <torch/csrc/utils/pybind.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "axon/executable.h"
#include "core/check.h"
#include "core/device.h"
#include "core/stream.h"
#include "profiler/device_activity.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace axon {
namespace {

class Executable {
 public:
  Executable(int device, const std::string& format, const py::bytes& image) : device_(device) {
    check_device_index(device);
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
    RECORD_FUNCTION("axon::launch_executable", std::vector<c10::IValue>());
    std::vector<axon_binding> bindings;
    bindings.reserve(tensors.size());
    for (size_t index = 0; index < tensors.size(); ++index) {
      const at::Tensor& tensor = tensors[index];
      TORCH_CHECK(tensor.device().type() == c10::DeviceType::PrivateUse1 && tensor.device().index() == device_,
                  "executable binding ", index, " must be a tensor on axon:", device_, ", got one on ",
                  tensor.device());
      TORCH_CHECK(tensor.is_contiguous() && !tensor.is_conj() && !tensor.is_neg(), "executable binding ", index,
                  " must be dense row-major");
      bindings.push_back(axon_binding{tensor.data_ptr(), tensor.nbytes()});
    }
    axon_stream stream = current_stream_handle(static_cast<c10::DeviceIndex>(device_));
    const ActivityLabelScope named([&] { return label; });
    AXON_CHECK(axon_stream_launch_executable(stream, handle_, entry_point.c_str(), bindings.data(), bindings.size(),
                                             nullptr, 0),
               "launching an executable");
  }

 private:
  int device_;
  axon_executable handle_ = nullptr;
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
}

}  // namespace axon
