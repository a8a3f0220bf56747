// What every direct kernel (direct_kernels.h) is built from: the operator and
// its way back to the generic kernel, the tests that decide whether the
// direct path takes a call, and the launch that queues a body over aliases
// the worker makes. Shared by direct_kernels.cpp, direct_pooling.cpp and
// direct_upsampling.cpp.
#pragma once

#include <ATen/EmptyTensor.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "compiled_execution/compiled_kernel.h"
#include "core/copy_on_write.h"
#include "core/device_allocator.h"
#include "core/stream.h"
#include "host_execution/cuda_dtypes.h"
#include "host_execution/device_memory_views.h"
#include "host_execution/stream_launch.h"

namespace axon::direct {

// Calls the direct kernels took themselves so far, queued or run inline
// (direct_kernel_launches).
inline std::atomic<int64_t> launches_queued{0};

// One operator with a direct kernel ("add.Tensor"): its lasting kernel name
// for the stream's records ("aten::add.Tensor"), and the boxed kernel the
// generic registration would have given it (generic_boxed_kernel), which
// runs every call the direct path declines exactly as it would without it.
class DirectOperator {
 public:
  explicit DirectOperator(std::string_view name)
      : qualified_("aten::" + std::string(name)),
        op_(c10::Dispatcher::singleton().findSchemaOrThrow(base_of(qualified_).c_str(), overload_of(name).c_str())),
        generic_kernel_(generic_boxed_kernel(name)) {}

  const char* kernel_name() const { return qualified_.c_str(); }

  // The generic kernel's results (one per output of the operator).
  template <class... Args>
  torch::jit::Stack generic_results(Args&&... args) const {
    torch::jit::Stack stack;
    stack.reserve(sizeof...(args));
    (stack.emplace_back(std::forward<Args>(args)), ...);
    generic_kernel_.callBoxed(op_, c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), &stack);
    return stack;
  }

  // The generic kernel's last (for most operators, only) result.
  template <class... Args>
  c10::IValue generic(Args&&... args) const {
    return std::move(generic_results(std::forward<Args>(args)...).back());
  }

 private:
  // "aten::add.Tensor" -> "aten::add"; "add.Tensor" -> "Tensor"; "relu" -> "".
  static std::string base_of(std::string_view qualified) {
    return std::string(qualified.substr(0, qualified.find('.')));
  }
  static std::string overload_of(std::string_view name) {
    const std::size_t dot = name.find('.');
    return dot == std::string_view::npos ? std::string() : std::string(name.substr(dot + 1));
  }

  std::string qualified_;
  c10::OperatorHandle op_;
  c10::BoxedKernel generic_kernel_;
};

// The dtypes whose CPU kernels these operators have for every case taken
// here (no widening, no complex conjugation).
inline bool direct_dtype(at::ScalarType type) {
  switch (type) {
    case at::kFloat:
    case at::kDouble:
    case at::kHalf:
    case at::kBFloat16:
    case at::kLong:
    case at::kInt:
    case at::kShort:
    case at::kChar:
    case at::kByte:
      return true;
    default:
      return false;
  }
}

// Whether `device` runs host kernels in memory the host can address, so
// that aliases made on the worker reach the bytes (the rest: HostAliases'
// staging, or compiled eager kernels, in the generic kernel).
inline bool direct_device(c10::Device device) {
  return host_addressable(device.index()) && !compiled_kernels_first(device);
}

// A dense axon tensor of a direct dtype without lazy conjugation/negation,
// whose memory is its own: a storage shared with a lazy clone takes the
// generic kernel, which knows from the schema which operands are written
// and gives only those memory of their own (core/copy_on_write.h).
inline bool direct_operand(const at::Tensor& tensor) {
  return tensor.defined() && tensor.is_privateuseone() && tensor.layout() == c10::kStrided &&
         direct_dtype(tensor.scalar_type()) && !tensor.is_conj() && !tensor.is_neg() && !tensor._is_zerotensor() &&
         !is_copy_on_write(tensor.storage());
}

// A fresh axon tensor on the current device, contiguous unless `format`
// says otherwise. The allocator checks the device first (refusing a
// shut-down runtime or a forked child), so the kernels that allocate need no
// check of their own before queuing.
inline at::Tensor fresh(c10::IntArrayRef sizes, at::ScalarType dtype,
                        c10::MemoryFormat format = c10::MemoryFormat::Contiguous) {
  return at::detail::empty_generic(sizes, device_allocator(), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), dtype,
                                   format);
}

// A direct kernel's launch: the description of its operands' aliases, where
// each operand's alias is, and the body, all in the one allocation.
template <std::size_t N, class Body>
class DirectLaunch final : public HostLaunch {
 public:
  explicit DirectLaunch(Body body) : body_(std::move(body)) {}

  // Queues this launch on the current stream of `device` over `tensors`.
  static void queue(const char* name, c10::Device device, const std::array<const at::Tensor*, N>& tensors, Body body,
                    TeamUse team_use) {
    auto launch = std::make_unique<DirectLaunch>(std::move(body));
    // Direct kernels take no operand that shares memory with a lazy clone
    // (direct_operand, direct_index): `write` is the safe default should
    // one slip through, copying an operand that is only read.
    for (std::size_t i = 0; i < N; ++i) launch->positions_[i] = launch->aliases_.add(*tensors[i], Access::write);
    const std::size_t bytes = launch->aliases_.bytes_visited();
    launches_queued.fetch_add(1, std::memory_order_relaxed);
    launch_on_stream(current_stream_handle(device.index()), name, bytes, std::move(launch), team_use);
  }

  void run() override {
    const c10::SmallVector<at::Tensor, 4> made = aliases_.make();
    std::array<at::Tensor, N> operands;
    for (std::size_t i = 0; i < N; ++i) operands[i] = made[positions_[i]];
    body_(operands);
  }

 private:
  DeferredAliases aliases_;
  std::array<std::size_t, N> positions_{};
  Body body_;
};

// Queues `body` on the current stream of `device`. It receives CPU aliases
// of `tensors` (in that order; a tensor given twice gets one alias), made
// on the worker. `body` captures only values made for the call.
// `team_use`: as launch_on_stream's (stream_launch.h).
template <std::size_t N, class Body>
void queue_over_aliases(const char* name, c10::Device device, const std::array<const at::Tensor*, N>& tensors,
                        Body body, TeamUse team_use = TeamUse::kBySize) {
  DirectLaunch<N, Body>::queue(name, device, tensors, std::move(body), team_use);
}

}  // namespace axon::direct
