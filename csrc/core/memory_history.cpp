#include "core/memory_history.h"

#include <torch/csrc/profiler/combined_traceback.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <utility>

namespace axon {
namespace {

struct History {
  std::mutex mutex;
  MemoryHistorySettings settings;
  std::map<c10::DeviceIndex, std::deque<MemoryTraceEntry>> traces;
};

History& history() {
  // Leaked on purpose: allocations and frees continue during interpreter shutdown.
  static auto* instance = new History();
  return *instance;
}

// Read without the lock on every allocation: 0 off, else bit 0 contexts, bit 1 contexts on free, bit 2 trace.
std::atomic<int> recording{0};

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

const char* memory_action_name(MemoryAction action) {
  switch (action) {
    case MemoryAction::alloc:
      return "alloc";
    case MemoryAction::free_requested:
      return "free_requested";
    case MemoryAction::free_completed:
      return "free_completed";
    case MemoryAction::segment_alloc:
      return "segment_alloc";
    case MemoryAction::segment_free:
      return "segment_free";
    case MemoryAction::oom:
      return "oom";
  }
  return "unknown";
}

void memory_history_configure(const MemoryHistorySettings& settings, bool clear) {
  auto& state = history();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.settings = settings;
  if (clear) state.traces.clear();
  for (auto& [device, trace] : state.traces) {
    while (trace.size() > settings.max_entries) trace.pop_front();
  }
  recording.store((settings.contexts ? 1 : 0) | (settings.contexts && settings.contexts_on_free ? 2 : 0) |
                  (settings.trace ? 4 : 0));
}

bool memory_history_wants_context(bool for_free) {
  const int flags = recording.load(std::memory_order_relaxed);
  return (flags & (for_free ? 2 : 1)) != 0;
}

std::shared_ptr<c10::GatheredContext> memory_history_gather() {
  bool cpp_frames = false;
  {
    auto& state = history();
    std::lock_guard<std::mutex> lock(state.mutex);
    if (!state.settings.contexts) return nullptr;
    cpp_frames = state.settings.cpp_frames;
  }
  return torch::CapturedTraceback::gather(/*python=*/true, /*script=*/false, cpp_frames);
}

void memory_history_record(c10::DeviceIndex device, MemoryAction action, std::uintptr_t address, std::size_t size,
                           c10::StreamId stream, std::shared_ptr<c10::GatheredContext> context,
                           std::size_t device_free) {
  if ((recording.load(std::memory_order_relaxed) & 4) == 0) return;
  auto& state = history();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (!state.settings.trace || state.settings.max_entries == 0) return;
  auto& trace = state.traces[device];
  if (trace.size() >= state.settings.max_entries) trace.pop_front();
  trace.push_back(MemoryTraceEntry{action, address, size, stream, now_us(), std::move(context), device_free});
}

std::vector<MemoryTraceEntry> memory_history_trace(c10::DeviceIndex device) {
  auto& state = history();
  std::lock_guard<std::mutex> lock(state.mutex);
  const auto found = state.traces.find(device);
  if (found == state.traces.end()) return {};
  return {found->second.begin(), found->second.end()};
}

}  // namespace axon
