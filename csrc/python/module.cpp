// torch_axon._C: the few driver facts Python needs that PyTorch's generic
// APIs (torch.Stream, torch.Event, torch.accelerator) do not already expose.
// Loading this module also registers the backend (static registrations in
// the core/ and ops/ objects linked into it).
#include <pybind11/pybind11.h>

#include "ops/operator_plan.h"
#include "python/bindings.h"

PYBIND11_MODULE(_C, m) {
  m.doc() = "Axon driver bindings (see torch_axon for the public API)";
  axon::init_exception_translation(m);
  axon::init_device(m);
  axon::init_streams(m);
  axon::init_random(m);
  axon::init_fallback(m);
  axon::init_executables(m);
  axon::init_compiled_kernels(m);
  axon::init_adopted_host_buffers(m);
  axon::init_memory_history(m);
  axon::init_host_kernels(m);
  axon::init_result_layouts(m);
  axon::init_distributed(m);
  axon::init_testing(m);
  axon::prepare_operator_plans();
}
