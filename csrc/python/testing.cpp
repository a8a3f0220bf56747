// torch_axon._C._testing: hooks only tests use. A "gate" task holds a stream
// until Python opens it, so tests observe asynchrony deterministically (work
// queued behind a closed gate is provably not done) instead of racing against
// a timer; live_blocks reports the caching allocator's totals,
// reference_runs the generic kernel's cache misses (and
// convolution_shape_computations the convolutions'), and
// run_with_results_in_place runs a Python "kernel" with its CPU allocations
// placed in given tensors, so the placement's corner cases are tested directly.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "axon/runtime.h"
#include "core/check.h"
#include "core/device.h"
#include "core/device_allocator.h"
#include "core/stream.h"
#include "host_execution/attention_blocks.h"
#include "host_execution/compiled_code_cores.h"
#include "host_execution/convolution.h"
#include "host_execution/convolution_call_shapes.h"
#include "host_execution/direct_kernels.h"
#include "host_execution/element_loop_proofs.h"
#include "host_execution/foreach_chains.h"
#include "host_execution/inline_kernels.h"
#include "host_execution/matrix_products.h"
#include "host_execution/openmp_helper_parking.h"
#include "host_execution/philox_batches.h"
#include "host_execution/program_thread_teams.h"
#include "host_execution/results_in_place.h"
#include "host_execution/small_matrix_products.h"
#include "host_execution/stream_kernel.h"
#include "host_execution/stream_launch.h"
#include "ops/shape_inference.h"
#include "profiler/device_activity.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace axon {
namespace {

struct Gate {
  std::mutex mutex;
  std::condition_variable opened_signal;
  bool opened = false;
};

std::mutex gates_mutex;
std::map<int64_t, std::shared_ptr<Gate>> gates;
int64_t next_gate_id = 1;

// Queues a task on (device, stream_id) that waits until the gate is opened and
// returns the gate's id.
int64_t close_gate(int device, int64_t stream_id) {
  TORCH_CHECK(!axon_runtime_is_shut_down(), "[axon] the runtime is shut down");
  axon_device_properties properties{};
  AXON_CHECK(axon_device_get_properties(0, &properties), "reading device properties");
  TORCH_CHECK(!properties.launch_blocking, "[axon] a gate would deadlock under AXON_LAUNCH_BLOCKING=1");
  const c10::Stream stream(
      c10::Stream::UNSAFE,
      c10::Device(c10::DeviceType::PrivateUse1, resolve_device_index(static_cast<c10::DeviceIndex>(device))),
      stream_id);
  auto gate = std::make_shared<Gate>();
  int64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(gates_mutex);
    id = next_gate_id++;
    gates[id] = gate;
  }
  launch_on_stream(stream_handle(stream), "testing gate", [gate]() {
    std::unique_lock<std::mutex> lock(gate->mutex);
    gate->opened_signal.wait(lock, [&] { return gate->opened; });
  });
  return id;
}

void open_gate(int64_t id) {
  std::shared_ptr<Gate> gate;
  {
    std::lock_guard<std::mutex> lock(gates_mutex);
    auto it = gates.find(id);
    TORCH_CHECK_VALUE(it != gates.end(), "[axon] unknown gate ", id);
    gate = it->second;
    gates.erase(it);
  }
  std::lock_guard<std::mutex> lock(gate->mutex);
  gate->opened = true;
  gate->opened_signal.notify_all();
}

py::dict live_blocks(int device) {
  const LiveBlockTotals totals = device_allocator_live_totals(static_cast<c10::DeviceIndex>(device));
  py::dict result;
  result["blocks"] = totals.blocks;
  result["bytes"] = totals.bytes;
  result["requested_bytes"] = totals.requested_bytes;
  result["counted_blocks"] = totals.counted_blocks;
  result["counted_bytes"] = totals.counted_bytes;
  result["counted_requested_bytes"] = totals.counted_requested_bytes;
  return result;
}

}  // namespace

void init_testing(py::module_& m) {
  py::module_ testing = m.def_submodule("_testing", "hooks for Axon's own tests; not an API");
  testing.def("close_gate", &close_gate, py::arg("device"), py::arg("stream_id"));
  testing.def("open_gate", &open_gate, py::arg("gate"));
  testing.def("live_blocks", &live_blocks, py::arg("device"));
  testing.def("reference_runs", &reference_runs,
              "calls whose outcome the generic kernel learnt by running the CPU kernel on stand-ins");
  testing.def("convolution_biases_summed_apart", &convolution_biases_summed_apart,
              "convolution backward calls whose bias gradient was summed apart (host_execution/convolution.h)");
  testing.def("convolution_shape_computations", &convolution_shape_computations,
              "convolution calls whose result shapes and layout were computed, not found in the call cache "
              "(host_execution/convolution_call_shapes.h)");
  testing.def("synchronous_runs", &synchronous_runs,
              "per operator, the generic kernel's calls that drained the stream and ran at once "
              "(host_execution/stream_kernel.h)");
  testing.def("direct_kernel_launches", &direct_kernel_launches,
              "calls the unboxed direct kernels took themselves, queued or inline (host_execution/direct_kernels.h)");
  testing.def(
      "single_thread_launches", &single_thread_launches,
      "host kernels queued to run on one thread, below kSingleThreadBelowBytes (host_execution/stream_launch.h)");
  testing.def("team_for_work_runs", &team_for_work_runs,
              "(alone, with the team): kernels below 1 MiB that want the team for their work, as they ran; the "
              "team only while a program thread waits (host_execution/stream_launch.h)");
  testing.def("program_thread_team_releases", &program_thread_team_releases,
              "times program threads asked OpenMP to end their own teams as they queued team kernels "
              "(host_execution/program_thread_teams.h)");
  testing.def("set_program_thread_team_releases_enabled", &set_program_thread_team_releases_enabled, py::arg("enabled"),
              "turns the release of program threads' OpenMP teams on or off");
  testing.def("inline_kernel_runs", &inline_kernel_runs,
              "calls computed on the calling thread while their stream was idle (host_execution/inline_kernels.h)");
  testing.def(
      "proven_product_summation",
      [](int64_t m, int64_t k, int64_t n) -> std::optional<std::string> {
        const std::optional<ProductSummation> summation = proven_product_summation(m, k, n);
        if (!summation) return std::nullopt;
        return *summation == ProductSummation::kRoundedFromZero ? "rounded from zero" : "fused after first product";
      },
      py::arg("m"), py::arg("k"), py::arg("n"),
      "how an (m×k)·(k×n) float product is summed inline, proven against this host's CPU mm; None: queued");
  testing.def("cores_freed_for_compiled_code", &cores_freed_for_compiled_code,
              "whether a compiled executable's load parked an OpenMP team (host_execution/compiled_code_cores.h)");
  testing.def("helper_parkings", &helper_parkings,
              "times a worker parked its OpenMP helpers (host_execution/openmp_helper_parking.h)");
  testing.def("foreach_chains_started", &foreach_chains_started,
              "_foreach_* calls that started a chain (host_execution/foreach_chains.h)");
  testing.def("foreach_calls_joined", &foreach_calls_joined, "_foreach_* calls that joined a queued chain");
  testing.def("foreach_rounds_in_element_loops", &foreach_rounds_in_element_loops,
              "rounds of chained calls that ran in proven element loops (host_execution/element_loops.h)");
  testing.def("set_element_loops_enabled", &set_element_loops_enabled, py::arg("enabled"),
              "False: chains run the CPU kernels tile by tile, for comparisons");
  testing.def("element_loops_enabled", &element_loops_enabled);
  testing.def("set_attention_blocks_enabled", &set_attention_blocks_enabled, py::arg("enabled"),
              "False: flash attention runs the CPU's kernels (host_execution/attention_blocks.h), for comparisons");
  testing.def("attention_blocks_available", &attention_blocks_available);
  testing.def("set_onednn_products_enabled", &set_onednn_products_enabled, py::arg("enabled"),
              "False: every float matrix product runs the CPU's kernel (host_execution/matrix_products.h)");
  testing.def("onednn_product_runs", &onednn_product_runs, "matrix products oneDNN computed so far");
  testing.def("forget_onednn_product_shapes", &forget_onednn_product_shapes,
              "the next 32 distinct products go to oneDNN again");
  py::enum_<ElementOp>(testing, "ElementOp")
      .value("add_scalar", ElementOp::kAddScalar)
      .value("add_list", ElementOp::kAddList)
      .value("sub_list", ElementOp::kSubList)
      .value("add_list_out", ElementOp::kAddListOut)
      .value("mul_scalar", ElementOp::kMulScalar)
      .value("mul_list", ElementOp::kMulList)
      .value("mul_number", ElementOp::kMulNumber)
      .value("div_scalar", ElementOp::kDivScalar)
      .value("div_list", ElementOp::kDivList)
      .value("div_number", ElementOp::kDivNumber)
      .value("lerp_scalar", ElementOp::kLerpScalar)
      .value("addcmul", ElementOp::kAddcmul)
      .value("addcdiv", ElementOp::kAddcdiv)
      .value("sqrt", ElementOp::kSqrt)
      .value("sqrt_out", ElementOp::kSqrtOut);
  testing.def(
      "element_loop_candidates_proven",
      [](ElementOp op, bool is_double) {
        return element_loop_candidates_proven(op, is_double ? at::kDouble : at::kFloat);
      },
      py::arg("op"), py::arg("is_double"), "per candidate loop of `op`, whether its proof passes now");
  py::enum_<PhiloxPath>(testing, "PhiloxPath")
      .value("compiled", PhiloxPath::kCompiled)
      .value("avx2", PhiloxPath::kAvx2)
      .value("avx512", PhiloxPath::kAvx512);
  testing.def("host_runs_philox_path", &host_runs_philox_path, py::arg("path"));
  testing.def(
      "philox_blocks",
      [](PhiloxPath path, uint64_t seed, uint64_t first_block, int64_t count) {
        std::vector<std::vector<uint32_t>> lanes(4, std::vector<uint32_t>(static_cast<size_t>(count)));
        uint32_t* const pointers[4] = {lanes[0].data(), lanes[1].data(), lanes[2].data(), lanes[3].data()};
        philox_blocks_by(path, seed, first_block, count, pointers);
        return lanes;
      },
      py::arg("path"), py::arg("seed"), py::arg("first_block"), py::arg("count"),
      "the four lanes of Philox blocks first_block .. first_block + count - 1, made by `path` "
      "(host_execution/philox_batches.h)");
  testing.def("device_activity_recording", &device_activity_recording,
              "whether a profiler session is recording the device's activity now");
  testing.def(
      "run_with_results_in_place",
      [](const std::vector<at::Tensor>& destinations, const std::function<std::vector<at::Tensor>()>& kernel,
         std::uintptr_t call_site) {
        // A test's call site is a number; the kernel's calls share what it learns.
        run_with_results_in_place(destinations, kernel, reinterpret_cast<const void*>(call_site));
      },
      py::arg("destinations"), py::arg("kernel"), py::arg("call_site") = 0);
  testing.def("results_copied", &results_copied,
              "fresh results a CPU kernel built outside their destinations, copied in "
              "(host_execution/results_in_place.h)");
}

}  // namespace axon
