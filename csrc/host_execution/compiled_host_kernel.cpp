#include "host_execution/compiled_host_kernel.h"

#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <cstring>
#include <optional>
#include <utility>

#include "core/check.h"
#include "core/host_waits.h"
#include "core/stream.h"
#include "host_execution/device_memory_views.h"
#include "host_execution/stream_launch.h"

namespace axon {
namespace {

// A copy of the whole storage behind `tensor`, viewed as `tensor` was: the
// kernel indexes from the data pointer with the strides it was compiled for,
// so the copy keeps the layout, not just the elements.
at::Tensor snapshot_of(const at::Tensor& tensor) {
  const auto& storage = tensor.storage();
  auto bytes = at::empty({static_cast<int64_t>(storage.nbytes())}, tensor.options().dtype(at::kByte));
  if (storage.nbytes() > 0) std::memcpy(bytes.data_ptr(), storage.data(), storage.nbytes());
  return at::empty({0}, tensor.options())
      .set_(bytes.storage(), tensor.storage_offset(), tensor.sizes(), tensor.strides());
}

// The single axon device the tensors live on (nullopt: CPU tensors only).
std::optional<c10::Device> axon_device_of(const std::string& kernel_name, const std::vector<HostKernelValue>& values) {
  std::optional<c10::Device> device;
  for (const auto& value : values) {
    const auto* tensor = std::get_if<at::Tensor>(&value);
    if (tensor == nullptr || !tensor->defined() || tensor->device().is_cpu()) continue;
    TORCH_CHECK_VALUE(tensor->device().type() == c10::DeviceType::PrivateUse1, kernel_name,
                      ": a compiled axon kernel got a tensor on ", tensor->device());
    TORCH_CHECK_VALUE(!device || *device == tensor->device(), kernel_name, ": a compiled axon kernel got tensors on ",
                      *device, " and ", tensor->device());
    device = tensor->device();
  }
  return device;
}

}  // namespace

void launch_host_kernel(HostKernelEntry entry, const std::string& kernel_name, const std::string& kinds,
                        const std::vector<HostKernelValue>& values) {
  TORCH_CHECK_VALUE(entry != nullptr, kernel_name, ": no entry point");
  TORCH_CHECK_VALUE(kinds.size() == values.size(), kernel_name, ": ", kinds.size(), " argument kinds for ",
                    values.size(), " arguments");
  const auto device = axon_device_of(kernel_name, values);
  TORCH_CHECK_VALUE(device.has_value(), kernel_name, ": a compiled axon kernel needs an axon tensor argument");
  const c10::DeviceGuard guard(*device);
  const axon_stream stream = current_stream_handle(device->index());

  HostAliases aliases;
  std::vector<std::uint64_t> slots(values.size(), 0);
  // Index into `slots` and the tensor whose data pointer goes there once the kernel runs.
  std::vector<std::pair<std::size_t, at::Tensor>> pointers;
  bool writes_cpu_tensor = false;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto kind = static_cast<HostKernelArgument>(kinds[i]);
    const auto& value = values[i];
    switch (kind) {
      case HostKernelArgument::read_pointer:
      case HostKernelArgument::written_pointer: {
        const auto* tensor = std::get_if<at::Tensor>(&value);
        TORCH_CHECK_TYPE(tensor != nullptr && tensor->defined(), kernel_name, ": argument ", i, " must be a tensor");
        const bool written = kind == HostKernelArgument::written_pointer;
        if (tensor->device().is_cpu()) {
          writes_cpu_tensor = writes_cpu_tensor || written;
          // A written lazy clone gets its own memory here, on the calling
          // thread: the kernel's data_ptr() must not copy it on the worker.
          if (written) static_cast<void>(tensor->mutable_data_ptr());
          pointers.emplace_back(i, written ? *tensor : snapshot_of(*tensor));
        } else {
          pointers.emplace_back(i, aliases.alias(*tensor, written ? Access::write : Access::read));
        }
        break;
      }
      case HostKernelArgument::integer: {
        const auto* integer = std::get_if<std::int64_t>(&value);
        TORCH_CHECK_TYPE(integer != nullptr, kernel_name, ": argument ", i, " must be an int");
        slots[i] = static_cast<std::uint64_t>(*integer);
        break;
      }
      case HostKernelArgument::real: {
        TORCH_CHECK_TYPE(!std::holds_alternative<at::Tensor>(value), kernel_name, ": argument ", i, " must be a float");
        const float real = std::holds_alternative<double>(value) ? static_cast<float>(std::get<double>(value))
                                                                 : static_cast<float>(std::get<std::int64_t>(value));
        std::uint32_t bits = 0;
        std::memcpy(&bits, &real, sizeof(bits));
        slots[i] = bits;
        break;
      }
      default:
        TORCH_CHECK_VALUE(false, kernel_name, ": unknown argument kind '", kinds[i], "'");
    }
  }

  launch_on_stream(stream, kernel_name.c_str(), aliases,
                   [entry, slots = std::move(slots), pointers = std::move(pointers)]() mutable {
                     for (const auto& [slot, tensor] : pointers) {
                       slots[slot] = reinterpret_cast<std::uintptr_t>(tensor.data_ptr());
                     }
                     entry(slots.data());
                   });
  if (writes_cpu_tensor) AXON_CHECK(wait_for_stream(stream), kernel_name.c_str());
}

}  // namespace axon
