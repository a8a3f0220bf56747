// Device facts Python needs that torch.accelerator does not expose: the
// driver's name and capabilities, properties, and the runtime's lifetime.
#include <pybind11/pybind11.h>

#include <string>

#include "axon/executable.h"
#include "axon/runtime.h"
#include "core/check.h"
#include "core/device.h"
#include "core/device_allocator.h"
#include "core/host_waits.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace axon {
namespace {

py::dict device_properties(int device) {
  check_device_index(device);
  axon_device_properties properties{};
  AXON_CHECK(axon_device_get_properties(device, &properties), "reading device properties");
  py::dict result;
  result["name"] = std::string(properties.name);
  result["total_memory"] = properties.total_memory;
  result["stream_priority_low"] = properties.stream_priority_low;
  result["stream_priority_high"] = properties.stream_priority_high;
  result["launch_blocking"] = properties.launch_blocking != 0;
  result["memory_protected"] = properties.memory_protected != 0;
  result["multi_processor_count"] = properties.compute_units;
  return result;
}

}  // namespace

void init_device(py::module_& m) {
  m.def("_device_count", [] { return static_cast<int>(device_count()); });
  m.def("_driver_name", [] { return std::string(axon_driver_name()); });
  m.def("_executable_format_supported", [](int device, const std::string& format) {
    int supported = 0;
    AXON_CHECK(axon_executable_format_supported(device, format.c_str(), &supported), "querying executable formats");
    return supported != 0;
  });
  m.def("_driver_capability", [](int device, int capability) {
    check_device_index(device);
    return driver_capability(device, static_cast<axon_capability>(capability));
  });
  m.def("_current_device", [] { return static_cast<int>(current_device()); });
  m.def("_set_device", [](int device) {
    check_device_index(device);
    set_current_device(static_cast<c10::DeviceIndex>(device));
  });
  m.def("_device_properties", &device_properties);
  m.def("_synchronize", [](int device) {
    py::gil_scoped_release no_gil;
    AXON_CHECK(wait_for_device(resolve_device_index(static_cast<c10::DeviceIndex>(device))),
               "synchronizing the device");
  });
  m.def("_shutdown", [] {
    py::gil_scoped_release no_gil;
    const axon_status status = axon_runtime_shutdown();
    forget_device_count();  // from here on check_device_index asks the driver, which refuses
    AXON_CHECK(status, "shutting down the runtime");
  });
  m.def("_is_shut_down", [] { return axon_runtime_is_shut_down() != 0; });
  m.def("_set_memory_fraction", [](int device, double fraction) {
    device_allocator_set_memory_fraction(static_cast<c10::DeviceIndex>(device), fraction);
  });
  m.def("_memory_fraction",
        [](int device) { return device_allocator_memory_fraction(static_cast<c10::DeviceIndex>(device)); });
}

}  // namespace axon
