// Bindings for core/memory_history.h: recording the allocation history, and
// one device's segments (with their blocks) and trace in the dictionary
// layout of torch.cuda.memory._snapshot(), which torch.cuda._memory_viz
// reads. torch_axon/device_module/memory_snapshot.py assembles the snapshot.
#include "core/memory_history.h"

#include <torch/csrc/profiler/combined_traceback.h>
#include <torch/csrc/utils/pybind.h>

#include <cstddef>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/device_allocator.h"
#include "python/bindings.h"

// Two functions of libtorch_python, declared here rather than through their
// header (torch/csrc/profiler/python/combined_traceback.h), which includes
// nlohmann/json, a header the wheel does not ship.
namespace torch {
// Turns tracebacks into lists of {"filename", "line", "name"} frame dictionaries (GIL held).
std::vector<pybind11::object> py_symbolize(std::vector<CapturedTraceback*>& to_symbolize);
// Registers the Python frame gatherer CapturedTraceback::gather uses (idempotent).
void installCapturedTracebackPython();
}  // namespace torch

namespace axon {
namespace {

namespace py = pybind11;

const char* block_state_name(BlockSnapshot::State state) {
  switch (state) {
    case BlockSnapshot::State::active_allocated:
      return "active_allocated";
    case BlockSnapshot::State::active_pending_free:
      return "active_pending_free";
    case BlockSnapshot::State::inactive:
      return "inactive";
  }
  return "inactive";
}

// Symbolizes every context at once (frames shared between stacks are resolved once) into
// lists of {"filename", "line", "name"} dictionaries; an empty list where there is none.
class FrameTable {
 public:
  std::size_t add(const std::shared_ptr<c10::GatheredContext>& context) {
    auto* traceback = context ? torch::getCapturedTracebackFromContext(context) : nullptr;
    if (traceback == nullptr) return kNone;
    tracebacks_.push_back(traceback);
    return tracebacks_.size() - 1;
  }
  void symbolize() { symbolized_ = torch::py_symbolize(tracebacks_); }
  py::object frames(std::size_t index) const { return index == kNone ? py::list() : symbolized_.at(index); }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::vector<torch::CapturedTraceback*> tracebacks_;
  std::vector<py::object> symbolized_;
};

py::dict snapshot(int64_t device_index) {
  check_device_index(device_index);
  const auto device = static_cast<c10::DeviceIndex>(device_index);
  const auto blocks = device_allocator_blocks(device);
  const auto trace = memory_history_trace(device);

  FrameTable frames;
  std::vector<std::size_t> block_frames, trace_frames;
  for (const auto& block : blocks) block_frames.push_back(frames.add(block.context));
  for (const auto& entry : trace) trace_frames.push_back(frames.add(entry.context));
  frames.symbolize();

  py::list segments;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const auto& block = blocks[i];
    const bool allocated = block.state == BlockSnapshot::State::active_allocated;
    const bool active = block.state != BlockSnapshot::State::inactive;
    py::dict entry;
    entry["address"] = block.address;
    entry["size"] = block.size;
    entry["requested_size"] = allocated ? block.requested : block.size;
    entry["state"] = block_state_name(block.state);
    entry["frames"] = frames.frames(block_frames[i]);
    py::dict segment;
    segment["device"] = device_index;
    segment["address"] = block.address;
    segment["total_size"] = block.size;
    segment["allocated_size"] = allocated ? block.size : 0;
    segment["active_size"] = active ? block.size : 0;
    segment["requested_size"] = allocated ? block.requested : 0;
    segment["stream"] = block.stream;
    segment["segment_type"] = block.small_pool ? "small" : "large";
    segment["segment_pool_id"] = py::make_tuple(0, 0);
    segment["is_expandable"] = false;
    segment["frames"] = frames.frames(block_frames[i]);
    segment["blocks"] = py::list();
    segment["blocks"].cast<py::list>().append(entry);
    segments.append(segment);
  }

  py::list events;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const auto& entry = trace[i];
    py::dict event;
    event["action"] = memory_action_name(entry.action);
    event["addr"] = entry.address;
    event["size"] = entry.size;
    event["stream"] = entry.stream;
    event["time_us"] = entry.time_us;
    event["frames"] = frames.frames(trace_frames[i]);
    if (entry.action == MemoryAction::oom) event["device_free"] = entry.device_free;
    events.append(event);
  }
  py::dict result;
  result["segments"] = segments;
  result["trace"] = events;
  return result;
}

}  // namespace

void init_memory_history(py::module_& m) {
  m.def(
      "_record_memory_history",
      [](bool trace, bool contexts, bool contexts_on_free, bool cpp_frames, std::size_t max_entries, bool clear) {
        if (contexts) torch::installCapturedTracebackPython();  // lets C++ gather Python frames
        memory_history_configure(MemoryHistorySettings{trace, contexts, contexts_on_free, cpp_frames, max_entries},
                                 clear);
      },
      py::arg("trace"), py::arg("contexts"), py::arg("contexts_on_free"), py::arg("cpp_frames"), py::arg("max_entries"),
      py::arg("clear"));
  m.def("_memory_snapshot", &snapshot, py::arg("device"),
        "`device`'s segments and recorded trace, each laid out as torch.cuda.memory._snapshot() lays them out.");
}

}  // namespace axon
