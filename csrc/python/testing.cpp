// Test-only hooks: a "gate" task that holds a stream until Python opens it,
// so tests can observe asynchrony deterministically (work queued behind a
// closed gate is provably not done) instead of racing against a timer.
#include "python/testing.h"

#include <condition_variable>
#include <map>
#include <mutex>

#include "core/check.h"
#include "core/device.h"
#include "core/stream.h"
#include "host_execution/stream_launch.h"

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

}  // namespace

int64_t testing_close_gate(int device, int64_t stream_id) {
  const c10::Stream stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1,
                                                            resolve_device_index(static_cast<c10::DeviceIndex>(device))),
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

void testing_open_gate(int64_t id) {
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

}  // namespace axon
