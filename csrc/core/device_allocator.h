// The caching device allocator: every axon tensor's memory comes from here.
//
// Like CUDA's, it is stream-ordered: a freed block is reused at once by later
// allocations on the stream it was allocated on (whose work is ordered after
// any use of the old tensor), while reuse from other streams waits until the
// block is idle. Tensor.record_stream(s) adds `s` to the block's users, so its
// reuse waits for the work queued on `s` at free time (an event per user).
// Memory goes back to the driver only in empty_cache() or when an allocation
// would otherwise fail, after synchronizing the device.
//
// Statistics follow torch.cuda.memory_stats: allocated/active/requested bytes
// per live block, reserved bytes per driver segment, exact at every moment.
//
// Thread-safety: all entry points are thread-safe (one mutex per device).
// Never calls into Python.
#pragma once

#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/Stream.h>

namespace axon {

c10::DeviceAllocator* device_allocator();

void device_allocator_record_stream(const c10::DataPtr& data_ptr, const c10::Stream& stream);

}  // namespace axon
