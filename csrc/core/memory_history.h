// Allocation history for memory snapshots: torch.axon.memory._record_memory_history,
// _snapshot and _dump_snapshot.
//
// What is recorded has the shape of CUDA's caching-allocator traces (the
// same actions, addresses, sizes, streams and stack traces), so PyTorch's
// memory visualizer (torch.cuda._memory_viz, and the web viewer that reads
// its pickles) reads an axon snapshot as it reads a CUDA one.
//
// Stack traces are torch::CapturedTraceback contexts (Python frames, and C++
// frames when asked for). Gathering one may take the GIL, so the allocator
// gathers before taking any lock of its own (never inside one, where a
// thread holding the GIL and waiting for that lock would deadlock it), and
// threads without a Python thread state (the device's workers) record no
// Python frames.
#pragma once

#include <c10/core/Allocator.h>
#include <c10/core/Device.h>
#include <c10/core/Stream.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace axon {

// The trace actions, named as CUDA's allocator names them in snapshots.
enum class MemoryAction {
  alloc,           // a block handed to a tensor
  free_requested,  // its tensor died; other streams may still use the block
  free_completed,  // the block is reusable
  segment_alloc,   // memory taken from the driver
  segment_free,    // memory given back to the driver
  oom,             // an allocation failed (size: what was asked for)
};
const char* memory_action_name(MemoryAction action);

struct MemoryTraceEntry {
  MemoryAction action;
  std::uintptr_t address = 0;
  std::size_t size = 0;
  c10::StreamId stream = 0;
  std::int64_t time_us = 0;  // wall clock, microseconds since the epoch
  std::shared_ptr<c10::GatheredContext> context;
  std::size_t device_free = 0;  // oom only: the driver's free bytes at the failure
};

// What to record; the defaults record nothing.
struct MemoryHistorySettings {
  bool trace = false;             // keep a trace of actions (enabled="all"), not just block contexts ("state")
  bool contexts = false;          // record stack traces at all
  bool contexts_on_free = false;  // also for frees (context="all")
  bool cpp_frames = false;        // C++ frames too (stacks="all")
  std::size_t max_entries = 0;    // trace length per device; older entries are dropped
};

// Starts, changes or (with default settings) stops recording, on every
// device. Stopping keeps the trace recorded so far; `clear` drops it.
void memory_history_configure(const MemoryHistorySettings& settings, bool clear);

// Whether stack traces are being recorded for allocations (or frees): a
// cheap check made before gathering one.
bool memory_history_wants_context(bool for_free);

// The calling thread's stack trace, per the settings (null when recording
// is off). Call with no lock held.
std::shared_ptr<c10::GatheredContext> memory_history_gather();

// Appends to `device`'s trace when a trace is being recorded.
void memory_history_record(c10::DeviceIndex device, MemoryAction action, std::uintptr_t address, std::size_t size,
                           c10::StreamId stream, std::shared_ptr<c10::GatheredContext> context,
                           std::size_t device_free = 0);

std::vector<MemoryTraceEntry> memory_history_trace(c10::DeviceIndex device);

}  // namespace axon
