// Test-only hooks exposed as torch_axon._C._testing_* (see testing.cpp).
#pragma once

#include <cstdint>

namespace axon {

// Queues a task on (device, stream_id) that waits until the gate is opened.
// Returns the gate's id. Under AXON_LAUNCH_BLOCKING=1 this would deadlock:
// callers check torch.axon.is_launch_blocking() first.
int64_t testing_close_gate(int device, int64_t stream_id);

void testing_open_gate(int64_t id);

}  // namespace axon
