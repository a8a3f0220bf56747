// The c10 device guard for axon: device switching, streams and events as
// PyTorch sees them (torch.Stream, torch.Event, torch.accelerator, autograd's
// cross-stream synchronization all come through here).
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "core/check.h"
#include "core/device.h"
#include "core/device_allocator.h"
#include "core/host_waits.h"
#include "core/stream.h"

namespace axon {
namespace {

axon_event as_event(void* event) { return static_cast<axon_event>(event); }

struct AxonGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  static constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;

  c10::DeviceType type() const override { return kType; }

  c10::Device exchangeDevice(c10::Device device) const override {
    TORCH_CHECK_VALUE(device.type() == kType, "[axon] expected an axon device, got ", device);
    const auto previous = current_device();
    if (device.index() != previous) {
      set_current_device(device.index());
    }
    return c10::Device(kType, previous);
  }

  c10::Device getDevice() const override { return c10::Device(kType, current_device()); }

  void setDevice(c10::Device device) const override {
    TORCH_CHECK_VALUE(device.type() == kType, "[axon] expected an axon device, got ", device);
    set_current_device(device.index());
  }

  void uncheckedSetDevice(c10::Device device) const noexcept override {
    try {
      set_current_device(device.index());
    } catch (...) {
      // Restoring a device that was valid when saved cannot fail; ignore.
    }
  }

  c10::Stream getStream(c10::Device device) const override { return current_stream(device.index()); }

  c10::Stream getDefaultStream(c10::Device device) const override { return default_stream(device.index()); }

  c10::Stream getNewStream(c10::Device device, int priority) const override {
    return stream_from_pool(device.index(), priority);
  }

  c10::Stream getStreamFromGlobalPool(c10::Device device, bool is_high_priority) const override {
    return stream_from_pool(device.index(), is_high_priority ? -1 : 0);
  }

  c10::Stream exchangeStream(c10::Stream stream) const override {
    const auto previous = current_stream(stream.device_index());
    set_current_stream(stream);
    return previous;
  }

  c10::DeviceIndex deviceCount() const noexcept override { return device_count(); }

  // torch.accelerator.get_device_capability: the dtypes axon tensors can hold and convert between, which are
  // the dtypes whose conversions the CPU kernels implement. Not included: the quantized dtypes (axon has no
  // quantized tensors) and the shell dtypes (bits*, int1-7, uint1-7, float4), which no kernel converts on any device.
  c10::DeviceCapability getDeviceCapability(c10::Device device) const override {
    check_device_index(device.index());
    c10::DeviceCapability capability;
    capability.capability_data.capability_bits = 0;
    auto& types = capability.capability_data.supported_scalar_types;
    types.has_Bool = types.has_Byte = types.has_Char = types.has_Short = types.has_Int = types.has_Long = 1;
    types.has_UInt16 = types.has_UInt32 = types.has_UInt64 = 1;
    types.has_Half = types.has_BFloat16 = types.has_Float = types.has_Double = 1;
    types.has_ComplexHalf = types.has_ComplexFloat = types.has_ComplexDouble = 1;
    types.has_Float8_e5m2 = types.has_Float8_e4m3fn = types.has_Float8_e5m2fnuz = types.has_Float8_e4m3fnuz = 1;
    types.has_Float8_e8m0fnu = 1;
    return capability;
  }

  bool queryStream(const c10::Stream& stream) const override {
    const axon_status status = axon_stream_query(stream_handle(stream));
    if (status == AXON_ERROR_NOT_READY) {
      return false;
    }
    AXON_CHECK(status, "querying a stream");
    return true;
  }

  void synchronizeStream(const c10::Stream& stream) const override {
    AXON_CHECK(wait_for_stream(stream_handle(stream)), "synchronizing a stream");
  }

  void synchronizeDevice(const c10::DeviceIndex device_index) const override {
    AXON_CHECK(wait_for_device(resolve_device_index(device_index)), "synchronizing the device");
  }

  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag flag) const override {
    TORCH_CHECK_VALUE(device_index == -1 || device_index == stream.device_index(),
                      "[axon] event of device axon:", static_cast<int>(device_index),
                      " cannot be recorded on a stream of device ", stream.device());
    if (*event == nullptr) {
      axon_event created = nullptr;
      const unsigned flags = flag == c10::EventFlag::BACKEND_DEFAULT ? AXON_EVENT_TIMING : AXON_EVENT_DEFAULT;
      AXON_CHECK(axon_event_create(flags, &created), "creating an event");
      *event = created;
    }
    AXON_CHECK(axon_event_record(as_event(*event), stream_handle(stream)), "recording an event");
  }

  void block(void* event, const c10::Stream& stream) const override {
    if (event == nullptr) {
      return;  // never recorded: nothing to wait for
    }
    AXON_CHECK(axon_stream_wait_event(stream_handle(stream), as_event(event)), "waiting on an event");
  }

  bool queryEvent(void* event) const override {
    if (event == nullptr) {
      return true;
    }
    const axon_status status = axon_event_query(as_event(event));
    if (status == AXON_ERROR_NOT_READY) {
      return false;
    }
    AXON_CHECK(status, "querying an event");
    return true;
  }

  void synchronizeEvent(void* event) const override {
    if (event == nullptr) {
      return;
    }
    AXON_CHECK(wait_for_event(as_event(event)), "synchronizing an event");
  }

  void destroyEvent(void* event, const c10::DeviceIndex /*device_index*/) const noexcept override {
    if (event != nullptr) {
      axon_event_destroy(as_event(event));
    }
  }

  double elapsedTime(void* start, void* end, const c10::DeviceIndex /*device_index*/) const override {
    TORCH_CHECK_VALUE(start != nullptr && end != nullptr,
                      "[axon] elapsed_time needs both events to have been recorded first");
    float milliseconds = 0;
    AXON_CHECK(axon_event_elapsed_time(as_event(start), as_event(end), &milliseconds),
               "measuring the time between events (create both with enable_timing=True, record, "
               "then synchronize)");
    return milliseconds;
  }

  void recordDataPtrOnStream(const c10::DataPtr& data_ptr, const c10::Stream& stream) const override {
    device_allocator_record_stream(data_ptr, stream);
  }
};

}  // namespace

C10_REGISTER_GUARD_IMPL(PrivateUse1, AxonGuardImpl);

}  // namespace axon
