#include "core/host_waits.h"

#include <atomic>

namespace axon {
namespace {

std::atomic<int> threads_waiting{0};

template <typename Wait, typename... Arguments>
axon_status counted(Wait wait, Arguments... arguments) {
  threads_waiting.fetch_add(1, std::memory_order_relaxed);
  const axon_status status = wait(arguments...);
  threads_waiting.fetch_sub(1, std::memory_order_relaxed);
  return status;
}

}  // namespace

axon_status wait_for_stream(axon_stream stream) { return counted(&axon_stream_synchronize, stream); }

axon_status wait_for_event(axon_event event) { return counted(&axon_event_synchronize, event); }

axon_status wait_for_device(int device) { return counted(&axon_device_synchronize, device); }

axon_status copy_and_wait(void* dst, const void* src, size_t bytes, axon_stream stream) {
  return counted(&axon_memory_copy, dst, src, bytes, stream);
}

bool host_thread_waiting() { return threads_waiting.load(std::memory_order_relaxed) > 0; }

}  // namespace axon
