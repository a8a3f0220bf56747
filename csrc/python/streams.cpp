// What torch.Stream and torch.Event do not expose: a stream's priority, timing
// between the driver's events, and torch.cuda._sleep's equivalent.
#include <pybind11/pybind11.h>

#include <chrono>
#include <cstdint>

#include "axon/runtime.h"
#include "core/check.h"
#include "core/device.h"
#include "core/stream.h"
#include "host_execution/stream_launch.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace axon {

void init_streams(py::module_& m) {
  m.def("_stream_priority", [](int device, int64_t stream_id) {
    check_device_index(device);
    return stream_priority(c10::Stream(c10::Stream::UNSAFE,
                                       c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device)),
                                       stream_id));
  });

  // torch.Event.elapsed_time rejects subclasses as its argument, so
  // torch.axon.Event measures through the driver with the events' handles.
  m.def("_event_elapsed_time", [](uintptr_t start, uintptr_t end) {
    TORCH_CHECK_VALUE(start != 0 && end != 0, "[axon] elapsed_time needs both events to have been recorded first");
    float milliseconds = 0;
    AXON_CHECK(
        axon_event_elapsed_time(reinterpret_cast<axon_event>(start), reinterpret_cast<axon_event>(end), &milliseconds),
        "measuring the time between events (create both with enable_timing=True, record, then synchronize)");
    return milliseconds;
  });

  // torch.axon._sleep(cycles), as torch.cuda._sleep: keeps the current
  // stream busy (PyTorch's test utilities use it to make asynchrony
  // observable). One "cycle" is one nanosecond of the device's time.
  m.def("_sleep", [](int64_t cycles) {
    TORCH_CHECK_VALUE(cycles >= 0, "[axon] _sleep expects a non-negative number of cycles, got ", cycles);
    const c10::DeviceIndex device = current_device();
    launch_on_stream(current_stream_handle(device), "_sleep", [cycles] {
      const auto end = std::chrono::steady_clock::now() + std::chrono::nanoseconds(cycles);
      while (std::chrono::steady_clock::now() < end) {
      }
    });
  });
}

}  // namespace axon
