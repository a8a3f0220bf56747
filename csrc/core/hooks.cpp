// PrivateUse1 hooks: how ATen asks the backend about itself (availability,
// devices, generators, pinned memory, storage resizing).
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/Storage.h>

#include "core/check.h"
#include "core/device.h"
#include "core/device_allocator.h"
#include "core/generator.h"
#include "core/pinned_memory_allocator.h"
#include "core/stream.h"

namespace axon {
namespace {

struct AxonHooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }

  bool isAvailable() const override { return device_count() > 0; }

  bool hasPrimaryContext(c10::DeviceIndex device_index) const override {
    return device_index >= 0 && device_index < device_count();
  }

  void init() const override {}

  c10::DeviceIndex deviceCount() const override { return device_count(); }

  void setCurrentDevice(c10::DeviceIndex device) const override { set_current_device(device); }

  c10::DeviceIndex getCurrentDevice() const override { return current_device(); }

  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    const auto previous = current_device();
    set_current_device(device);
    return previous;
  }

  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override { return exchangeDevice(device); }

  bool isPinnedPtr(const void* data) const override {
    int pinned = 0;
    return axon_host_pointer_is_pinned(data, &pinned) == AXON_SUCCESS && pinned != 0;
  }

  at::Allocator* getPinnedMemoryAllocator() const override { return pinned_memory_allocator(); }

  at::Device getDeviceFromPtr(void* data) const override {
    int device = -1;
    AXON_CHECK(axon_memory_pointer_device(data, &device), "finding the device of a pointer");
    return at::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device));
  }

  const at::Generator& getDefaultGenerator(c10::DeviceIndex device_index) const override {
    return default_generator(device_index);
  }

  at::Generator getNewGenerator(c10::DeviceIndex device_index) const override { return make_generator(device_index); }

  // Grows or shrinks a storage in place (Tensor.resize_, set_, untyped
  // storage resize_), keeping the old bytes that still fit.
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t new_bytes) const override {
    TORCH_CHECK(storage.resizable(), "[axon] trying to resize storage that is not resizable");
    const size_t old_bytes = storage.nbytes();
    if (new_bytes == old_bytes) {
      return;
    }
    const auto device = storage.device().index() >= 0 ? storage.device().index() : current_device();
    c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, device));
    c10::DataPtr fresh = storage.allocator()->allocate(new_bytes);
    const size_t keep = std::min(old_bytes, new_bytes);
    if (keep > 0 && storage.data() != nullptr) {
      AXON_CHECK(axon_memory_copy_async(fresh.get(), storage.data(), keep, current_stream_handle(device)),
                 "copying storage contents during resize");
    }
    auto& mutable_storage = const_cast<c10::Storage&>(storage);
    c10::DataPtr old = mutable_storage.set_data_ptr(std::move(fresh));
    // The copy above reads `old` on the current stream: keep it from being
    // reused by another stream until that copy has run.
    device_allocator_record_stream(old, current_stream(device));
    mutable_storage.set_nbytes(new_bytes);
  }
};

struct RegisterHooks {
  RegisterHooks() {
    static AxonHooks hooks;
    at::RegisterPrivateUse1HooksInterface(&hooks);
  }
};
static RegisterHooks register_hooks;

}  // namespace
}  // namespace axon
