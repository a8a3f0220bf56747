// One collective being issued: the steps every ProcessGroupAxon method
// shares, on the caller's thread.
//
//   CollectiveCall call(group, "all_reduce", c10d::OpType::ALLREDUCE, opts.timeout);
//   at::Tensor buffer = call.inout(tensor);      // CPU alias the transport uses
//   return call.submit([=]() mutable { ... transport op on the aliases ... }, {tensor});
//
// The first tensor fixes the device. input()/output()/inout() check each
// tensor (axon, same device, strided) and return the CPU tensor the transport
// uses for it. Where the driver says the host can address device memory, that
// is a CPU alias of the tensor, or of a contiguous staging buffer when the
// tensor is not contiguous; otherwise it is a pinned host buffer. Staging
// copies go in on the issue stream (ordered after the caller's current
// stream) and back on the completion stream. Without staging, the inputs-
// ready event is recorded on the caller's stream directly.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Stream.h>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "distributed/collective_runner.h"

namespace axon::distributed {

class ProcessGroupAxon;

// How a reduce op maps onto the transport's.
struct ReducePlan {
  c10d::ReduceOp transport_op;
  bool average = false;                 // divide by the group size afterwards
  std::optional<double> scalar_factor;  // PREMUL_SUM with a number
  at::Tensor tensor_factor;             // PREMUL_SUM with a one-element tensor
  bool premultiply() const { return scalar_factor.has_value() || tensor_factor.defined(); }
};

class CollectiveCall {
 public:
  CollectiveCall(ProcessGroupAxon& group, std::string name, c10d::OpType type,
                 std::chrono::milliseconds requested_timeout);
  ~CollectiveCall();
  CollectiveCall(const CollectiveCall&) = delete;
  CollectiveCall& operator=(const CollectiveCall&) = delete;

  // Checks `op` against `dtype` (AVG needs floating point) and plans it.
  ReducePlan plan_reduce(const c10d::ReduceOp& op, c10::ScalarType dtype);

  at::Tensor input(const at::Tensor& tensor);
  at::Tensor output(const at::Tensor& tensor);
  at::Tensor inout(const at::Tensor& tensor);
  // An input the transport reduces: premultiplied into a staging buffer for
  // PREMUL_SUM, else as input().
  at::Tensor reduce_input(const at::Tensor& tensor, const ReducePlan& plan);
  // An in-place reduced tensor: premultiplied for PREMUL_SUM, divided for AVG.
  at::Tensor reduce_inout(const at::Tensor& tensor, const ReducePlan& plan);
  // Divides `tensor` (an output) by the group size after the transport.
  void average_after(const at::Tensor& tensor);

  // What every rank must agree on: the collective, the dtype and an element
  // count (-1: counts may differ, e.g. uneven all_to_all). Checked across
  // ranks before data moves unless AXON_DISTRIBUTED_CHECKS=0; a mismatch
  // fails the collective on every rank (DistBackendError) and leaves the
  // group usable, where Gloo alone would abort the process.
  void agree_on(c10::ScalarType dtype, int64_t elements);

  // The caller waits right away (async_op=False): when nothing else is in
  // flight the collective then runs on the calling thread.
  void set_synchronous(bool synchronous) { synchronous_ = synchronous; }

  // Queues `step` on the completion stream once the transport finished.
  void after_transport(std::function<void()> step);

  // Used when the collective has no tensor (barrier).
  void use_device(c10::DeviceIndex device);

  // Queues the job; `start` runs on the launcher thread once the inputs are
  // ready and returns the transport's work. `outputs` are the Work's result.
  c10::intrusive_ptr<c10d::Work> submit(std::function<c10::intrusive_ptr<c10d::Work>()> start,
                                        std::vector<at::Tensor> outputs, bool report_source_rank = false);

  ProcessGroupAxon& group() { return group_; }

 private:
  void check(const at::Tensor& tensor, const char* role);
  void begin(c10::DeviceIndex device);
  // Orders the issue stream after the caller's and makes it current, for
  // staging work (first use only).
  void use_issue_stream();
  void keep(const at::Tensor& tensor);
  void protect_kept_tensors();
  at::Tensor staging_buffer(const at::Tensor& tensor);
  // Alias of `tensor`, or of a contiguous staging buffer filled from it
  // (copy_in) and/or copied back to it after the transport (copy_back).
  at::Tensor stage(const at::Tensor& tensor, const char* role, bool copy_in, bool copy_back);
  // The CPU tensor the transport uses for the contiguous axon tensor `tensor`.
  at::Tensor transport_buffer(const at::Tensor& tensor, bool copy_in, bool copy_back);
  at::Tensor premultiplied(const at::Tensor& tensor, const ReducePlan& plan, bool copy_back);

  ProcessGroupAxon& group_;
  const std::string name_;
  const c10d::OpType type_;
  const std::chrono::milliseconds timeout_;
  std::optional<c10::DeviceIndex> device_;
  std::optional<c10::Stream> issue_;
  std::optional<c10::Stream> completion_;
  std::optional<c10::Stream> caller_stream_;
  std::unique_ptr<CollectiveJob> job_;
  bool submitted_ = false;
  bool synchronous_ = false;
  bool issue_ordered_ = false;
  bool host_addressable_ = true;  // of the device's memory (driver capability)
};

}  // namespace axon::distributed
