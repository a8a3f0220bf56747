#include <ATen/ops/empty_strided.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/device.h"
#include "core/host_waits.h"
#include "core/stream.h"
#include "host_execution/cpu_call_on_worker.h"
#include "host_execution/device_memory_views.h"
#include "host_execution/stream_launch.h"
#include "layouts/dense_result_prediction.h"
#include "layouts/host_layout_tensors.h"
#include "layouts/layout_kernels.h"
#include "ops/argument_tensors.h"
#include "ops/operator_plan.h"

namespace axon {
namespace {

// Copies between devices take tensors of other devices by design.
bool crosses_devices(const std::string& name) {
  return name == "aten::copy_" || name == "aten::_to_copy" || name == "aten::copy_sparse_to_sparse_" ||
         name == "aten::_copy_from" || name == "aten::_copy_from_and_resize";
}

// A CPU tensor an axon call may take: a number (0-dim), or a nested
// tensor's sizes, strides or offsets (int64 CPU tensors on every device,
// in arguments named for them).
bool accepted_on_the_host(const at::Tensor& tensor, const std::string& argument) {
  if (!tensor.is_cpu() || tensor.layout() != c10::kStrided || tensor.is_nested()) return false;
  const bool metadata = argument.find("size") != std::string::npos || argument.find("stride") != std::string::npos ||
                        argument.find("offset") != std::string::npos || argument.find("shape") != std::string::npos;
  return tensor.dim() == 0 || (metadata && tensor.scalar_type() == at::kLong);
}

// The single axon device of the call. As for dense kernels, tensors of other
// devices are refused, except CPU tensors accepted_on_the_host and copies'
// sources.
c10::Device common_device(const c10::FunctionSchema& schema, const OperatorPlan& plan,
                          c10::ArrayRef<c10::IValue> args) {
  std::optional<c10::Device> device;
  std::optional<c10::Device> offending;
  const bool any_device = crosses_devices(plan.name.substr(0, plan.name.find('.')));
  for (size_t i = 0; i < args.size(); ++i) {
    for_each_tensor(args[i], [&](const at::Tensor& tensor) {
      if (!tensor.defined()) return;
      if (tensor.is_privateuseone()) {
        if (!device.has_value()) device = tensor.device();
        if (*device != tensor.device() && !any_device && !offending.has_value()) offending = tensor.device();
      } else if (!any_device && !accepted_on_the_host(tensor, schema.arguments()[i].name()) && !offending.has_value()) {
        offending = tensor.device();
      }
    });
  }
  for (const auto& arg : args) {
    if (!device.has_value() && arg.isDevice() && arg.toDevice().is_privateuseone()) {
      const auto index = arg.toDevice().index();
      device = c10::Device(c10::DeviceType::PrivateUse1, index >= 0 ? index : current_device());
    }
  }
  TORCH_CHECK(device.has_value(), "[axon] ", plan.name, ": expected an axon tensor or device argument");
  TORCH_CHECK(!offending.has_value(), "Expected all tensors to be on the same device, but found at least two devices, ",
              *device, " and ", *offending, "! (in ", plan.name, " on axon)");
  return *device;
}

// Whether the call names a device other than axon for its results (a copy to
// the CPU): they then stay on the host.
bool results_stay_on_host(c10::ArrayRef<c10::IValue> args) {
  for (const auto& arg : args) {
    if (arg.isDevice() && !arg.toDevice().is_privateuseone()) return true;
  }
  return false;
}

// Queues the CPU kernel of a call whose dense results `meta_results`
// describe on the stream, like the generic dense kernel: the results are
// allocated now and filled when the stream reaches the kernel.
void queue_on_stream(const c10::OperatorHandle& op, const OperatorPlan& plan, torch::jit::Stack* stack,
                     c10::Device device, const std::vector<at::Tensor>& meta_results) {
  const size_t num_args = op.schema().arguments().size();
  const auto args = torch::jit::last(*stack, num_args);
  HostLayoutTensors call(device);
  torch::jit::Stack cpu_stack;
  for (const auto& arg : args) {
    cpu_stack.push_back(arg.isDevice() ? retarget_device(arg, c10::kCPU)
                                       : map_tensors(arg, [&](const at::Tensor& t) { return call.to_host(t, false); }));
  }
  std::vector<at::Tensor> results;
  std::vector<at::Tensor> result_aliases;
  for (const at::Tensor& shape : meta_results) {
    results.push_back(at::empty_strided(shape.sizes(), shape.strides(), shape.options().device(device)));
    result_aliases.push_back(call.aliases().alias(results.back(), Access::overwrite));
  }
  launch_on_stream(
      current_stream_handle(device.index()), plan.name.c_str(), call.aliases(),
      [op, cpu_stack = std::move(cpu_stack), result_aliases = std::move(result_aliases)]() {
        // On a copy: the results die here, on the worker, rather than with the launch.
        torch::jit::Stack stack = cpu_stack;
        op.callBoxed(stack);
        for (size_t i = 0; i < result_aliases.size(); ++i) {
          const at::Tensor& result = stack[i].toTensor();
          // The signature's prediction held at its confirming run; refuse to fill a result it got wrong.
          TORCH_CHECK(
              result.layout() == c10::kStrided && !result.is_nested() && result.sizes() == result_aliases[i].sizes(),
              "[axon] internal error: ", op.schema().name(), " gave a ", result.layout(), " result of sizes ",
              result.sizes(), " where ", result_aliases[i].sizes(), " was predicted");
          result_aliases[i].copy_(result);
        }
      },
      LaunchRelease::kOnWorker, plan.team_at_any_size ? TeamUse::kForWork : TeamUse::kBySize);
  torch::jit::drop(*stack, num_args);
  for (auto& result : results) stack->push_back(std::move(result));
}

// Drains the stream and runs the CPU kernel on the worker, waiting for it
// (host_execution/cpu_call_on_worker.h says why), over aliases of the
// arguments; results come back to the device.
void run_synchronously(const c10::OperatorHandle& op, const OperatorPlan& plan, torch::jit::Stack* stack,
                       c10::Device device) {
  const size_t num_args = op.schema().arguments().size();
  const auto args = torch::jit::last(*stack, num_args);
  const auto& schema = op.schema();
  const axon_stream stream = current_stream_handle(device.index());
  AXON_CHECK(wait_for_stream(stream), plan.name.c_str());

  const std::vector<c10::IValue> originals(args.begin(), args.end());
  // Tensors the kernel may write, wherever else they are passed.
  std::vector<const c10::TensorImpl*> mutated;
  for (size_t i = 0; i < num_args; ++i) {
    if (!plan.argument_is_written[i]) continue;
    for_each_tensor(originals[i], [&](const at::Tensor& t) { mutated.push_back(t.unsafeGetTensorImpl()); });
  }
  const auto is_mutated = [&](const at::Tensor& t) {
    return std::find(mutated.begin(), mutated.end(), t.unsafeGetTensorImpl()) != mutated.end();
  };
  HostLayoutTensors call(device);
  torch::jit::Stack cpu_stack;
  cpu_stack.reserve(num_args);
  for (size_t i = 0; i < num_args; ++i) {
    cpu_stack.push_back(originals[i].isDevice() ? retarget_device(originals[i], c10::kCPU)
                                                : map_tensors(originals[i], [&](const at::Tensor& t) {
                                                    return call.to_host(t, is_mutated(t));
                                                  }));
  }
  const std::vector<c10::IValue> host_arguments(cpu_stack.begin(), cpu_stack.end());
  // Staged bytes arrive before the kernel in stream order: its wait covers them.
  if (call.aliases().staged()) call.aliases().stage_in(stream);
  call_cpu_kernel_on_worker(stream, plan.name.c_str(), op, cpu_stack);
  // Results that stay on the host (a copy to the CPU) are cloned while the staging buffers they may view live.
  const bool stay_on_host = results_stay_on_host(originals);
  if (stay_on_host) {
    for (auto& result : cpu_stack) {
      result = map_tensors(result, [&](const at::Tensor& t) { return call.detached_from_device(t); });
    }
  }
  if (call.aliases().staged()) {
    call.aliases().stage_out(stream);
    AXON_CHECK(wait_for_stream(stream), plan.name.c_str());
  }
  for (size_t i = 0; i < num_args; ++i) {
    if (!plan.argument_is_written[i]) continue;
    if (originals[i].isTensor()) call.write_back(originals[i].toTensor(), host_arguments[i].toTensor());
  }

  torch::jit::drop(*stack, num_args);
  for (size_t i = 0; i < cpu_stack.size(); ++i) {
    const auto& alias_info = schema.returns()[i].alias_info();
    if (alias_info != nullptr && alias_info->isWrite() && plan.return_argument[i] >= 0) {
      stack->push_back(originals[plan.return_argument[i]]);
    } else if (stay_on_host) {
      stack->push_back(cpu_stack[i]);
    } else {
      stack->push_back(map_tensors(cpu_stack[i], [&](const at::Tensor& t) { return call.to_device(t); }));
    }
  }
}

}  // namespace

std::optional<c10::Device> axon_device_of(c10::ArrayRef<c10::IValue> args) {
  for (const auto& arg : args) {
    std::optional<c10::Device> found;
    for_each_tensor(arg, [&](const at::Tensor& t) {
      if (!found.has_value() && t.defined() && t.is_privateuseone()) found = t.device();
    });
    if (found.has_value()) return found;
  }
  for (const auto& arg : args) {
    if (arg.isDevice() && arg.toDevice().is_privateuseone() && arg.toDevice().has_index()) return arg.toDevice();
  }
  return std::nullopt;
}

void run_layout_host_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const OperatorPlan& plan = plan_for(op);
  const auto& schema = op.schema();
  const size_t num_args = schema.arguments().size();
  const auto args = torch::jit::last(*stack, num_args);
  const c10::Device device = common_device(schema, plan, args);
  check_device_index(device.index());
  c10::DeviceGuard device_guard(device);
  // A copy's source on another axon device comes over first, ordered by the dense copy between devices:
  // the kernel then waits for one device's stream only.
  for (size_t i = stack->size() - num_args; i < stack->size(); ++i) {
    (*stack)[i] = map_tensors((*stack)[i], [&](const at::Tensor& t) {
      return t.defined() && t.is_privateuseone() && t.device() != device ? t.to(device) : t;
    });
  }
  auto prediction = predict_dense_results(op, plan, args);
  std::vector<int64_t> signature;
  if (prediction.has_value()) {
    signature = call_signature(args);
    const auto verdict = prediction_verdict(op.schema(), signature);
    if (verdict == std::optional<bool>(true)) {
      queue_on_stream(op, plan, stack, device, *prediction);
      return;
    }
    if (verdict.has_value()) prediction.reset();  // refuted for this signature: run synchronously
  }
  run_synchronously(op, plan, stack, device);
  if (prediction.has_value()) {
    const auto results = torch::jit::last(*stack, op.schema().returns().size());
    record_prediction(op.schema(), std::move(signature), *prediction, results);
  }
}

}  // namespace axon
