// torch_axon._C: the few driver facts Python needs that PyTorch's generic
// APIs (torch.Stream, torch.Event, torch.accelerator) do not already expose.
// Loading this module also registers the backend (static registrations in
// the core/ and ops/ objects linked into it).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <c10/core/DeviceGuard.h>
#include <torch/csrc/Generator.h>

#include <chrono>
#include <cstring>
#include <string>

#include "axon/runtime.h"
#include "core/check.h"
#include "core/device_allocator.h"
#include "core/device.h"
#include "core/generator.h"
#include "core/stream.h"
#include "ops/cpu_fallback.h"
#include "host_execution/stream_launch.h"
#include "python/executables.h"
#include "python/host_import.h"
#include "python/testing.h"

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
  return result;
}

AxonGeneratorImpl* generator_of(int device) {
  check_device_index(device);
  return at::check_generator<AxonGeneratorImpl>(default_generator(static_cast<c10::DeviceIndex>(device)));
}

py::bytes get_rng_state(int device) {
  auto* generator = generator_of(device);
  std::lock_guard<std::mutex> lock(generator->mutex_);
  auto state = generator->get_state();
  return py::bytes(static_cast<const char*>(state->data()), static_cast<size_t>(state->numel()));
}

}  // namespace
}  // namespace axon

PYBIND11_MODULE(_C, m) {
  using namespace axon;
  m.doc() = "Axon driver bindings (see torch_axon for the public API)";

  // Errors raised by C++ arrive as c10::Error subclasses; translate the
  // common ones so Python sees the documented exception types.
  py::register_exception_translator([](std::exception_ptr error) {
    try {
      if (error) std::rethrow_exception(error);
    } catch (const c10::OutOfMemoryError& e) {
      py::object type = py::module_::import("torch").attr("OutOfMemoryError");
      PyErr_SetString(type.ptr(), e.what_without_backtrace());
    } catch (const c10::IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what_without_backtrace());
    } catch (const c10::ValueError& e) {
      PyErr_SetString(PyExc_ValueError, e.what_without_backtrace());
    } catch (const c10::NotImplementedError& e) {
      PyErr_SetString(PyExc_NotImplementedError, e.what_without_backtrace());
    } catch (const c10::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what_without_backtrace());
    }
  });

  m.def("_device_count", [] { return static_cast<int>(device_count()); });
  m.def("_driver_name", [] { return std::string(axon_driver_name()); });
  init_executables(m);
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
    AXON_CHECK(axon_device_synchronize(resolve_device_index(static_cast<c10::DeviceIndex>(device))),
               "synchronizing the device");
  });
  m.def("_shutdown", [] {
    py::gil_scoped_release no_gil;
    AXON_CHECK(axon_runtime_shutdown(), "shutting down the runtime");
  });
  m.def("_is_shut_down", [] { return axon_runtime_is_shut_down() != 0; });

  m.def("_testing_close_gate", [](int device, int64_t stream_id) {
    TORCH_CHECK(!axon_runtime_is_shut_down(), "[axon] the runtime is shut down");
    axon_device_properties properties{};
    AXON_CHECK(axon_device_get_properties(0, &properties), "reading device properties");
    TORCH_CHECK(!properties.launch_blocking, "[axon] a gate would deadlock under AXON_LAUNCH_BLOCKING=1");
    return testing_close_gate(device, stream_id);
  });
  m.def("_testing_open_gate", &testing_open_gate);
  m.def("_testing_live_blocks", [](int device) {
    const LiveBlockTotals totals = device_allocator_live_totals(static_cast<c10::DeviceIndex>(device));
    py::dict result;
    result["blocks"] = totals.blocks;
    result["bytes"] = totals.bytes;
    result["requested_bytes"] = totals.requested_bytes;
    result["counted_blocks"] = totals.counted_blocks;
    result["counted_bytes"] = totals.counted_bytes;
    result["counted_requested_bytes"] = totals.counted_requested_bytes;
    return result;
  });

  // torch.Event.elapsed_time rejects subclasses as its argument, so
  // torch.axon.Event measures through the driver with the events' handles.
  m.def("_event_elapsed_time", [](uintptr_t start, uintptr_t end) {
    TORCH_CHECK_VALUE(start != 0 && end != 0, "[axon] elapsed_time needs both events to have been recorded first");
    float milliseconds = 0;
    AXON_CHECK(axon_event_elapsed_time(reinterpret_cast<axon_event>(start), reinterpret_cast<axon_event>(end),
                                       &milliseconds),
               "measuring the time between events (create both with enable_timing=True, record, then synchronize)");
    return milliseconds;
  });

  m.def("_stream_priority", [](int device, int64_t stream_id) {
    check_device_index(device);
    return stream_priority(c10::Stream(c10::Stream::UNSAFE,
                                       c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device)),
                                       stream_id));
  });

  bind_host_import(m);

  set_fallback_warning_hook([](const std::string& message) {
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    // stacklevel 2: the warning points at the user's line, not torch.ops.
    if (PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 2) < 0) throw py::error_already_set();
  });
  m.def("_fallback_counts", &fallback_counts);
  m.def("_reset_fallback_counts", &reset_fallback_counts);
  m.def("_fallback_mode", &fallback_mode);

  m.def("_get_rng_state", &get_rng_state);
  m.def("_set_rng_state", [](int device, const std::string& state) {
    TORCH_CHECK_VALUE(state.size() == 2 * sizeof(uint64_t), "[axon] RNG state must be 16 bytes (seed, offset), got ",
                      state.size());
    auto* generator = generator_of(device);
    std::lock_guard<std::mutex> lock(generator->mutex_);
    uint64_t seed = 0;
    uint64_t offset = 0;
    std::memcpy(&seed, state.data(), sizeof(uint64_t));
    std::memcpy(&offset, state.data() + sizeof(uint64_t), sizeof(uint64_t));
    generator->set_current_seed(seed);
    generator->set_offset(offset);
  });
  m.def("_manual_seed", [](int device, uint64_t seed) {
    auto* generator = generator_of(device);
    std::lock_guard<std::mutex> lock(generator->mutex_);
    generator->set_current_seed(seed);
  });
  m.def("_seed", [](int device) {
    auto* generator = generator_of(device);
    std::lock_guard<std::mutex> lock(generator->mutex_);
    return generator->seed();
  });
  // torch.axon.default_generators: the Generator objects behind manual_seed
  // (graph-safe RNG and torch._prims look them up there, as on CUDA).
  m.def("_default_generator", [](int device) {
    check_device_index(device);
    return py::reinterpret_steal<py::object>(
        THPGenerator_initDefaultGenerator(default_generator(static_cast<c10::DeviceIndex>(device))));
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
  m.def("_initial_seed", [](int device) {
    auto* generator = generator_of(device);
    std::lock_guard<std::mutex> lock(generator->mutex_);
    return generator->current_seed();
  });
}
