// c10::Stream <-> driver stream mapping and the per-thread current stream.
//
// A c10::Stream carries only (device, id). Id 0 is the device's default
// stream; other ids index a per-device table of driver streams. New streams
// come from fixed pools (one per priority level, handed out round-robin, as
// CUDA does), because c10::Stream has no destructor to release them with.
#pragma once

#include <c10/core/Stream.h>

#include "axon/stream.h"

namespace axon {

// The driver stream behind `stream`; throws on a foreign or unknown id.
axon_stream stream_handle(const c10::Stream& stream);

c10::Stream default_stream(c10::DeviceIndex device);

// The calling thread's current stream for `device` (-1: current device).
c10::Stream current_stream(c10::DeviceIndex device = -1);
axon_stream current_stream_handle(c10::DeviceIndex device = -1);

// Makes `stream` current for its device on the calling thread.
void set_current_stream(const c10::Stream& stream);

// A pooled stream of the given priority (clamped to the driver's range).
c10::Stream stream_from_pool(c10::DeviceIndex device, int priority);

int stream_priority(const c10::Stream& stream);

}  // namespace axon
