#include "core/stream.h"

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "core/check.h"
#include "core/device.h"

namespace axon {
namespace {

constexpr int kStreamsPerPriority = 8;
constexpr int kMaxPriorityLevels = 8;
// Id 0 is the default stream; pooled ids follow, kStreamsPerPriority per level.
constexpr int kMaxStreamsPerDevice = 1 + kStreamsPerPriority * kMaxPriorityLevels;

struct DeviceStreams {
  std::array<std::atomic<axon_stream>, kMaxStreamsPerDevice> handles{};
  std::array<std::atomic<uint32_t>, kMaxPriorityLevels> next_in_pool{};
  std::mutex create_mutex;
};

struct StreamTable {
  std::vector<std::unique_ptr<DeviceStreams>> devices;
  int least_urgent = 0;
  int most_urgent = 0;

  StreamTable() {
    const auto count = device_count();
    for (c10::DeviceIndex i = 0; i < count; ++i) {
      devices.push_back(std::make_unique<DeviceStreams>());
    }
    if (axon_stream_priority_range(&least_urgent, &most_urgent) != AXON_SUCCESS) {
      least_urgent = most_urgent = 0;
    }
    if (least_urgent - most_urgent + 1 > kMaxPriorityLevels) {
      most_urgent = least_urgent - kMaxPriorityLevels + 1;
    }
  }
};

StreamTable& table() {
  // Leaked on purpose: streams may be used by destructors that run at exit.
  static auto* instance = new StreamTable();
  return *instance;
}

DeviceStreams& device_streams(c10::DeviceIndex device) {
  check_device_index(device);
  return *table().devices.at(device);
}

int clamp_priority(int priority) {
  const auto& t = table();
  return std::min(std::max(priority, t.most_urgent), t.least_urgent);
}

thread_local std::vector<c10::StreamId> thread_current_stream_ids;

}  // namespace

axon_stream stream_handle(const c10::Stream& stream) {
  TORCH_CHECK_VALUE(stream.device_type() == c10::DeviceType::PrivateUse1,
                    "[axon] expected an axon stream, got a stream of device ", stream.device());
  auto& streams = device_streams(stream.device_index());
  const auto id = stream.id();
  if (id == 0) {
    axon_stream handle = streams.handles[0].load(std::memory_order_acquire);
    if (handle == nullptr) {
      AXON_CHECK(axon_stream_get_default(stream.device_index(), &handle), "getting the default stream");
      streams.handles[0].store(handle, std::memory_order_release);
    }
    return handle;
  }
  axon_stream handle = nullptr;
  if (id > 0 && id < kMaxStreamsPerDevice) {
    handle = streams.handles[id].load(std::memory_order_acquire);
  }
  TORCH_CHECK_VALUE(handle != nullptr, "[axon] unknown stream id ", id, " on device ", stream.device(),
                    ": streams must come from torch.axon.Stream / torch.Stream");
  return handle;
}

c10::Stream default_stream(c10::DeviceIndex device) {
  device = resolve_device_index(device);
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, device), 0);
}

c10::Stream current_stream(c10::DeviceIndex device) {
  device = resolve_device_index(device);
  c10::StreamId id = 0;
  if (static_cast<size_t>(device) < thread_current_stream_ids.size()) {
    id = thread_current_stream_ids[device];
  }
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, device), id);
}

axon_stream current_stream_handle(c10::DeviceIndex device) { return stream_handle(current_stream(device)); }

void set_current_stream(const c10::Stream& stream) {
  stream_handle(stream);  // validates device and id
  const auto device = stream.device_index();
  if (thread_current_stream_ids.size() <= static_cast<size_t>(device)) {
    thread_current_stream_ids.resize(device + 1, 0);
  }
  thread_current_stream_ids[device] = stream.id();
}

c10::Stream stream_from_pool(c10::DeviceIndex device, int priority) {
  device = resolve_device_index(device);
  auto& streams = device_streams(device);
  priority = clamp_priority(priority);
  const int level = table().least_urgent - priority;  // 0 = least urgent
  const uint32_t slot = streams.next_in_pool[level].fetch_add(1) % kStreamsPerPriority;
  const int id = 1 + level * kStreamsPerPriority + static_cast<int>(slot);
  if (streams.handles[id].load(std::memory_order_acquire) == nullptr) {
    std::lock_guard<std::mutex> lock(streams.create_mutex);
    if (streams.handles[id].load(std::memory_order_acquire) == nullptr) {
      axon_stream handle = nullptr;
      AXON_CHECK(axon_stream_create(device, priority, &handle), "creating a stream");
      streams.handles[id].store(handle, std::memory_order_release);
    }
  }
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, device), id);
}

int stream_priority(const c10::Stream& stream) {
  int priority = 0;
  AXON_CHECK(axon_stream_get_priority(stream_handle(stream), &priority), "reading a stream priority");
  return priority;
}

}  // namespace axon
