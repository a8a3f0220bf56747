// The default generators (one Philox stream per device) and their state: a
// seed and an offset, 16 bytes, as torch.axon.get_rng_state returns them.
#include <pybind11/pybind11.h>

#include <torch/csrc/Generator.h>

#include <cstring>
#include <mutex>
#include <string>

#include "core/device.h"
#include "core/generator.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace axon {
namespace {

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

void set_rng_state(int device, const std::string& state) {
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
}

}  // namespace

void init_random(py::module_& m) {
  m.def("_get_rng_state", &get_rng_state);
  m.def("_set_rng_state", &set_rng_state);
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
  m.def("_initial_seed", [](int device) {
    auto* generator = generator_of(device);
    std::lock_guard<std::mutex> lock(generator->mutex_);
    return generator->current_seed();
  });
  // torch.axon.default_generators: the Generator objects behind manual_seed
  // (graph-safe RNG and torch._prims look them up there, as on CUDA).
  m.def("_default_generator", [](int device) {
    check_device_index(device);
    return py::reinterpret_steal<py::object>(
        THPGenerator_initDefaultGenerator(default_generator(static_cast<c10::DeviceIndex>(device))));
  });
}

}  // namespace axon
