// Allocation of axon tensors through the caching device allocator.
#include "ops/tensor_factories.h"

#include <ATen/Context.h>
#include <ATen/EmptyTensor.h>
#include <ATen/native/TensorFactories.h>
#include <c10/core/DeviceGuard.h>

#include "core/device.h"
#include "core/device_allocator.h"

namespace axon {
namespace {

c10::DeviceIndex target_device(std::optional<c10::Device> device) {
  if (device.has_value()) {
    TORCH_CHECK_VALUE(device->type() == c10::DeviceType::PrivateUse1, "[axon] expected an axon device, got ", *device);
    return resolve_device_index(device->index());
  }
  return current_device();
}

}  // namespace

bool fills_uninitialized_memory() {
  return at::globalContext().deterministicAlgorithms() && at::globalContext().deterministicFillUninitializedMemory();
}

at::Tensor& fill_if_deterministic(at::Tensor& tensor) {
  if (C10_UNLIKELY(fills_uninitialized_memory())) at::native::fill_empty_deterministic_(tensor);
  return tensor;
}

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                               std::optional<bool> pin_memory, std::optional<c10::MemoryFormat> memory_format) {
  TORCH_CHECK_VALUE(!pin_memory.value_or(false), "[axon] only CPU tensors can be pinned");
  TORCH_CHECK_NOT_IMPLEMENTED(layout.value_or(c10::kStrided) == c10::kStrided,
                              "[axon] only strided tensors are supported, got layout ", *layout);
  const c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, target_device(device)));
  at::Tensor result =
      at::detail::empty_generic(size, device_allocator(), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                c10::dtype_or_default(dtype), memory_format);
  return fill_if_deterministic(result);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<c10::ScalarType> dtype,
                         std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                         std::optional<bool> pin_memory) {
  TORCH_CHECK_VALUE(!pin_memory.value_or(false), "[axon] only CPU tensors can be pinned");
  TORCH_CHECK_NOT_IMPLEMENTED(layout.value_or(c10::kStrided) == c10::kStrided,
                              "[axon] only strided tensors are supported, got layout ", *layout);
  const c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, target_device(device)));
  at::Tensor result = at::detail::empty_strided_generic(size, stride, device_allocator(),
                                                        c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                                        c10::dtype_or_default(dtype));
  return fill_if_deterministic(result);
}

namespace {

// Hands out no memory: a ZeroTensor's elements are all zero by definition and
// are never read (ATen's ZeroTensor fallback materializes them when needed).
struct ZeroTensorAllocator final : public c10::Allocator {
  explicit ZeroTensorAllocator(c10::Device device) : device_(device) {}
  c10::DataPtr allocate(size_t /*bytes*/) override { return c10::DataPtr(nullptr, device_); }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  void copy_data(void* /*destination*/, const void* /*source*/, std::size_t count) const override {
    TORCH_CHECK(count == 0, "[axon] ZeroTensors hold no data to copy");
  }

 private:
  c10::Device device_;
};

}  // namespace

at::Tensor efficient_zero_tensor(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                                 std::optional<c10::Layout> /*layout*/, std::optional<c10::Device> device,
                                 std::optional<bool> /*pin_memory*/) {
  ZeroTensorAllocator allocator(c10::Device(c10::DeviceType::PrivateUse1, target_device(device)));
  const auto keys =
      c10::DispatchKeySet(c10::DispatchKey::PrivateUse1) | c10::DispatchKeySet(c10::DispatchKey::ZeroTensor);
  return at::detail::empty_generic(size, &allocator, keys, c10::dtype_or_default(dtype), std::nullopt);
}

}  // namespace axon
