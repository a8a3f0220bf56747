// The caching device allocator: every axon tensor's memory comes from here.
//
// Like CUDA's, it is stream-ordered: a freed block is reused at once by later
// allocations on the stream it was allocated on (whose work is ordered after
// any use of the old tensor), while reuse from other streams waits until the
// block is idle. Tensor.record_stream(s) adds `s` to the block's users, so its
// reuse waits for the work queued on `s` at free time (an event per user).
// Blocks are never split; sizes above 8 KiB are rounded up to one of four
// classes per power of two (the .cpp says why). Memory goes back to the
// driver only in empty_cache() or when an allocation would otherwise fail,
// after synchronizing the device.
//
// Statistics follow torch.cuda.memory_stats: allocated/active/requested bytes
// per live block, reserved bytes per driver segment, exact at every moment.
//
// Thread-safety: all entry points are thread-safe (one mutex per device).
// Never calls into Python.
#pragma once

#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/Storage.h>
#include <c10/core/Stream.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace axon {

c10::DeviceAllocator* device_allocator();

// The driver's host view of the memory `data_ptr` (an axon storage's)
// holds, as the allocator asked it once for the block, or null where it
// did not (memory the host cannot address, memory from elsewhere): then
// ask the driver.
void* device_allocator_host_view(const c10::DataPtr& data_ptr);

// Gives `storage`'s DataPtr (an allocation of this allocator, or nothing is
// done) its data pointer as its context, which ATen's copy-on-write requires
// of a storage it lazily clones (core/copy_on_write.h). The block is found
// by address from then on, by the allocator's own lookups too.
void device_allocator_share_by_address(const c10::Storage& storage);

void device_allocator_record_stream(const c10::DataPtr& data_ptr, const c10::Stream& stream);

// torch.axon.set/get_per_process_memory_fraction: the allocator reserves at
// most `fraction` (0 to 1) of `device`'s capacity, releasing its cache before
// it raises OutOfMemoryError at that limit, as CUDA's does.
void device_allocator_set_memory_fraction(c10::DeviceIndex device, double fraction);
double device_allocator_memory_fraction(c10::DeviceIndex device);

// Device memory the allocator does not own (e.g. an adopted host buffer, see
// host_execution/adopted_host_buffers.h), wrapped as a DataPtr on
// `device` so that it is accounted like an allocation: it counts as one live
// block in a segment of its own (allocation, segment, active, allocated,
// reserved, active and requested bytes, current and peak) while the DataPtr
// lives. It is never cached or reused. Tensor.record_stream works as for
// allocated blocks.
//
// When the DataPtr dies, the allocator waits (through events, so pending task
// errors stay for the user to see) for the work queued so far on the stream
// that was current at wrapping time and on every recorded stream, then calls
// `release`, which must not throw, to end the ownership, and only then
// uncounts the block. `release` runs on the thread that drops the last
// reference, without any allocator lock held.
c10::DataPtr device_allocator_wrap_external(void* pointer, size_t bytes, c10::DeviceIndex device,
                                            std::function<void()> release);

// One block of `device`'s memory as the allocator holds it, for memory
// snapshots (core/memory_history.h). Every block is its own driver segment
// here (the allocator never splits one).
struct BlockSnapshot {
  enum class State { active_allocated, active_pending_free, inactive };
  std::uintptr_t address = 0;
  size_t size = 0;
  size_t requested = 0;
  c10::StreamId stream = 0;
  State state = State::inactive;
  bool small_pool = false;                        // counted in the small pool of the statistics
  std::shared_ptr<c10::GatheredContext> context;  // where it was allocated, when history was recorded
};
std::vector<BlockSnapshot> device_allocator_blocks(c10::DeviceIndex device);

// What the allocator holds live on `device`, summed over its live blocks
// (the ground truth the statistics must equal at every moment; tests check
// that after each one), next to what its statistics count, read together.
struct LiveBlockTotals {
  size_t blocks = 0;
  size_t bytes = 0;                     // block sizes (allocated_bytes)
  size_t requested_bytes = 0;           // what callers asked for (requested_bytes)
  int64_t counted_blocks = 0;           // allocation.all.current
  int64_t counted_bytes = 0;            // allocated_bytes.all.current
  int64_t counted_requested_bytes = 0;  // requested_bytes.all.current
};
LiveBlockTotals device_allocator_live_totals(c10::DeviceIndex device);

}  // namespace axon
