#include "distributed/collective_call.h"

#include <ATen/ops/empty.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <utility>

#include "core/check.h"
#include "core/copy_on_write.h"
#include "core/device_allocator.h"
#include "core/stream.h"
#include "distributed/process_group_axon.h"
#include "host_execution/device_memory_views.h"

namespace axon::distributed {
namespace {

std::string describe_call(const std::string& fallback_name, const int64_t* fingerprint) {
  const auto type = static_cast<c10d::OpType>(fingerprint[0]);
  std::string what =
      c10::str(c10d::opTypeToString(type), " of ", c10::toString(static_cast<c10::ScalarType>(fingerprint[1])));
  if (fingerprint[2] >= 0) what += c10::str(" with ", fingerprint[2], " elements");
  return what;
}

// Gathers every rank's (collective, dtype, elements) with one small
// all_gather and raises, on every rank alike, if they differ.
void verify_agreement(c10d::Backend& transport, const std::string& name, const std::vector<int64_t>& mine,
                      std::chrono::milliseconds timeout) {
  const int size = transport.getSize();
  const auto count = static_cast<int64_t>(mine.size());
  at::Tensor local = at::empty({count}, at::TensorOptions().dtype(at::kLong));
  std::copy(mine.begin(), mine.end(), local.data_ptr<int64_t>());
  std::vector<std::vector<at::Tensor>> gathered(1);
  for (int r = 0; r < size; ++r) gathered[0].push_back(at::empty({count}, local.options()));
  std::vector<at::Tensor> inputs{local};
  transport.allgather(gathered, inputs)->wait(timeout);
  std::string disagreement;
  for (int r = 0; r < size; ++r) {
    const int64_t* theirs = gathered[0][r].data_ptr<int64_t>();
    if (!std::equal(mine.begin(), mine.end(), theirs)) {
      disagreement += c10::str("; rank ", r, " called ", describe_call(name, theirs));
    }
  }
  if (!disagreement.empty()) {
    C10_THROW_ERROR(DistBackendError,
                    c10::str("the ranks called different collectives: this rank (", transport.getRank(), ") called ",
                             describe_call(name, mine.data()), disagreement, ". No data was exchanged."));
  }
}

}  // namespace

CollectiveCall::CollectiveCall(ProcessGroupAxon& group, std::string name, c10d::OpType type,
                               std::chrono::milliseconds requested_timeout)
    : group_(group),
      name_(std::move(name)),
      type_(type),
      timeout_(group.timeout_for(requested_timeout)),
      job_(std::make_unique<CollectiveJob>()) {}

CollectiveCall::~CollectiveCall() {
  // An argument error after staging began: restore the caller's stream; the
  // issue stream's wait is harmless.
  if (issue_ordered_) set_current_stream(*caller_stream_);
}

void CollectiveCall::check(const at::Tensor& tensor, const char* role) {
  TORCH_CHECK_VALUE(tensor.defined(), "[axon ", name_, "] expected a tensor as ", role, ", got None");
  TORCH_CHECK_TYPE(tensor.device().type() == c10::DeviceType::PrivateUse1, "[axon ", name_, "] expected ", role,
                   " tensors on axon, got a tensor on ", tensor.device().str(),
                   " (use the gloo backend for CPU tensors, e.g. init_process_group(\"cpu:gloo,axon:axon\"))");
  TORCH_CHECK_VALUE(tensor.layout() == c10::kStrided, "[axon ", name_, "] expected strided ", role,
                    " tensors, got layout ", tensor.layout());
  if (device_) {
    TORCH_CHECK_VALUE(tensor.device().index() == *device_, "[axon ", name_,
                      "] expected every tensor on axon:", static_cast<int>(*device_), ", got a tensor on ",
                      tensor.device().str(), " as ", role);
  } else {
    begin(tensor.device().index());
  }
}

void CollectiveCall::use_device(c10::DeviceIndex device) {
  if (!device_) begin(device);
}

void CollectiveCall::begin(c10::DeviceIndex device) {
  device_ = device;
  issue_ = group_.issue_stream(device);
  completion_ = group_.completion_stream(device);
  caller_stream_ = current_stream(device);
  host_addressable_ = host_addressable(device);
}

void CollectiveCall::use_issue_stream() {
  if (issue_ordered_) return;
  issue_ordered_ = true;
  // The issue stream continues after the work already queued on the
  // caller's stream (which produced the inputs).
  axon_event ready = nullptr;
  AXON_CHECK(axon_event_create(AXON_EVENT_DEFAULT, &ready), "creating a collective's event");
  axon_status status = axon_event_record(ready, stream_handle(*caller_stream_));
  if (status == AXON_SUCCESS) status = axon_stream_wait_event(stream_handle(*issue_), ready);
  axon_event_destroy(ready);
  AXON_CHECK(status, "ordering the communication stream after the current stream");
  // Staging work below goes to the issue stream.
  set_current_stream(*issue_);
}

void CollectiveCall::keep(const at::Tensor& tensor) { job_->keep_alive.push_back(tensor); }

void CollectiveCall::protect_kept_tensors() {
  // The transport's own use is covered by the job's references (dropped only
  // once it finished). Device work still queued on the collective's streams
  // when the last reference goes (staging copies, finishing steps) is what
  // record_stream must cover, so that the memory is not reused early.
  const bool finishing = !job_->finish_steps.empty();
  if (!issue_ordered_ && !finishing) return;
  for (const auto& tensor : job_->keep_alive) {
    const c10::DataPtr& data = tensor.storage().data_ptr();
    if (data.get() == nullptr) continue;
    if (issue_ordered_) device_allocator_record_stream(data, *issue_);
    if (finishing) device_allocator_record_stream(data, *completion_);
  }
}

at::Tensor CollectiveCall::staging_buffer(const at::Tensor& tensor) {
  return at::empty(tensor.sizes(), tensor.options().memory_format(c10::MemoryFormat::Contiguous));
}

at::Tensor CollectiveCall::transport_buffer(const at::Tensor& tensor, bool copy_in, bool copy_back) {
  if (host_addressable_) return host_alias(tensor);
  // Device memory the host cannot touch: the transport works on a pinned
  // copy. The host allocator keeps the buffer until the copies have run.
  use_issue_stream();
  at::Tensor host = at::empty(tensor.sizes(), tensor.options().device(c10::kCPU).pinned_memory(true));
  if (copy_in) host.copy_(tensor, /*non_blocking=*/true);
  job_->host_buffers.push_back(host);
  if (copy_back) job_->finish_steps.push_back([tensor, host]() mutable { tensor.copy_(host, /*non_blocking=*/true); });
  return host;
}

at::Tensor CollectiveCall::stage(const at::Tensor& tensor, const char* role, bool copy_in, bool copy_back) {
  check(tensor, role);
  // Written: memory of its own first if a lazy clone shares it, the copy
  // queued on the current stream, which the collective waits for.
  if (copy_back) materialize_for_write(tensor.storage());
  keep(tensor);
  if (tensor.is_contiguous()) return transport_buffer(tensor, copy_in, copy_back);
  use_issue_stream();
  at::Tensor staged = staging_buffer(tensor);
  if (copy_in) staged.copy_(tensor);
  keep(staged);
  at::Tensor buffer = transport_buffer(staged, copy_in, copy_back);  // its copy back runs first
  if (copy_back) job_->finish_steps.push_back([tensor, staged]() mutable { tensor.copy_(staged); });
  return buffer;
}

at::Tensor CollectiveCall::input(const at::Tensor& tensor) { return stage(tensor, "input", true, false); }

at::Tensor CollectiveCall::output(const at::Tensor& tensor) { return stage(tensor, "output", false, true); }

at::Tensor CollectiveCall::inout(const at::Tensor& tensor) { return stage(tensor, "input/output", true, true); }

ReducePlan CollectiveCall::plan_reduce(const c10d::ReduceOp& op, c10::ScalarType dtype) {
  ReducePlan plan{op};
  switch (op.op_) {
    case c10d::ReduceOp::AVG:
      TORCH_CHECK_VALUE(c10::isFloatingType(dtype) || c10::isComplexType(dtype), "[axon ", name_,
                        "] ReduceOp.AVG expects floating-point tensors, got ", dtype);
      plan.transport_op = c10d::ReduceOp(c10d::ReduceOp::SUM);
      plan.average = true;
      break;
    case c10d::ReduceOp::PREMUL_SUM: {
      auto* supplement = dynamic_cast<c10d::PreMulSumSupplement*>(op.supplement_.get());
      TORCH_CHECK_VALUE(supplement != nullptr, "[axon ", name_, "] PREMUL_SUM without a factor");
      TORCH_CHECK_VALUE(c10::isFloatingType(dtype) || c10::isComplexType(dtype), "[axon ", name_,
                        "] PREMUL_SUM expects floating-point tensors, got ", dtype);
      if (supplement->tensor_factor.defined()) {
        plan.tensor_factor = supplement->tensor_factor;
      } else {
        plan.scalar_factor = supplement->double_factor;
      }
      plan.transport_op = c10d::ReduceOp(c10d::ReduceOp::SUM);
      break;
    }
    case c10d::ReduceOp::UNUSED:
      TORCH_CHECK_VALUE(false, "[axon ", name_, "] unsupported reduce op");
    default:
      break;
  }
  return plan;
}

at::Tensor CollectiveCall::reduce_input(const at::Tensor& tensor, const ReducePlan& plan) {
  if (!plan.premultiply()) return input(tensor);
  return premultiplied(tensor, plan, false);
}

at::Tensor CollectiveCall::premultiplied(const at::Tensor& tensor, const ReducePlan& plan, bool copy_back) {
  check(tensor, "input");
  if (copy_back) materialize_for_write(tensor.storage());  // as stage() does
  keep(tensor);
  use_issue_stream();
  at::Tensor staged = staging_buffer(tensor);
  staged.copy_(tensor);
  if (plan.tensor_factor.defined()) {
    at::Tensor factor = plan.tensor_factor.to(tensor.device());
    keep(factor);
    staged.mul_(factor);
  } else {
    staged.mul_(*plan.scalar_factor);
  }
  keep(staged);
  at::Tensor buffer = transport_buffer(staged, true, copy_back);  // its copy back runs first
  if (copy_back) job_->finish_steps.push_back([tensor, staged]() mutable { tensor.copy_(staged); });
  return buffer;
}

at::Tensor CollectiveCall::reduce_inout(const at::Tensor& tensor, const ReducePlan& plan) {
  at::Tensor buffer;
  if (plan.premultiply()) {
    buffer = premultiplied(tensor, plan, true);
  } else {
    buffer = inout(tensor);
  }
  if (plan.average) average_after(tensor);
  return buffer;
}

void CollectiveCall::agree_on(c10::ScalarType dtype, int64_t elements) {
  if (!group_.checks_enabled() || group_.getSize() == 1) return;
  job_->verify = [transport = group_.transport_handle(), name = name_, timeout = timeout_,
                  mine = std::vector<int64_t>{static_cast<int64_t>(type_), static_cast<int64_t>(dtype), elements}]() {
    verify_agreement(*transport, name, mine, timeout);
  };
}

void CollectiveCall::after_transport(std::function<void()> step) { job_->finish_steps.push_back(std::move(step)); }

void CollectiveCall::average_after(const at::Tensor& tensor) {
  const int64_t size = group_.getSize();
  job_->finish_steps.push_back([tensor, size]() mutable { tensor.div_(size); });
}

c10::intrusive_ptr<c10d::Work> CollectiveCall::submit(std::function<c10::intrusive_ptr<c10d::Work>()> start,
                                                      std::vector<at::Tensor> outputs, bool report_source_rank) {
  TORCH_INTERNAL_ASSERT(device_.has_value(), "[axon ", name_, "] issued without a device");
  TORCH_INTERNAL_ASSERT(!submitted_);
  submitted_ = true;
  auto work = c10::make_intrusive<CollectiveWork>(group_.getRank(), type_, name_,
                                                  c10::Device(c10::DeviceType::PrivateUse1, *device_),
                                                  std::move(outputs), timeout_, group_.next_sequence());
  protect_kept_tensors();
  // Without staging, the inputs are ready where the caller's stream is now.
  const c10::Stream ready_on = issue_ordered_ ? *issue_ : *caller_stream_;
  axon_event inputs_ready = nullptr;
  AXON_CHECK(axon_event_create(AXON_EVENT_DEFAULT, &inputs_ready), "creating a collective's event");
  const axon_status status = axon_event_record(inputs_ready, stream_handle(ready_on));
  if (status != AXON_SUCCESS) {
    axon_event_destroy(inputs_ready);
    AXON_CHECK(status, "recording a collective's inputs-ready event");
  }
  if (issue_ordered_) set_current_stream(*caller_stream_);
  issue_ordered_ = false;

  job_->work = work;
  job_->inputs_ready = inputs_ready;
  job_->start = std::move(start);
  job_->completion_stream = *completion_;
  job_->report_source_rank = report_source_rank;
  group_.submit(std::move(job_), synchronous_);
  return work;
}

}  // namespace axon::distributed
