// ProcessGroupAxon's collectives: each stages its tensors with a
// CollectiveCall and starts the same operation of the transport on the
// host aliases once the inputs are ready.
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>

#include <utility>

#include "core/copy_on_write.h"
#include "core/device.h"
#include "distributed/collective_call.h"
#include "distributed/process_group_axon.h"

namespace axon::distributed {
namespace {

using c10d::OpType;
using TransportHandle = c10::intrusive_ptr<c10d::Backend>;

std::vector<at::Tensor> flatten(const std::vector<std::vector<at::Tensor>>& lists) {
  std::vector<at::Tensor> all;
  for (const auto& list : lists) all.insert(all.end(), list.begin(), list.end());
  return all;
}

using TensorLists = std::vector<std::vector<at::Tensor>>;

std::vector<at::Tensor> stage_inputs(CollectiveCall& call, const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> aliases;
  for (const auto& tensor : tensors) aliases.push_back(call.input(tensor));
  return aliases;
}

std::vector<at::Tensor> stage_outputs(CollectiveCall& call, const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> aliases;
  for (const auto& tensor : tensors) aliases.push_back(call.output(tensor));
  return aliases;
}

TensorLists stage_input_lists(CollectiveCall& call, const TensorLists& lists) {
  TensorLists aliases;
  for (const auto& list : lists) aliases.push_back(stage_inputs(call, list));
  return aliases;
}

TensorLists stage_output_lists(CollectiveCall& call, const TensorLists& lists) {
  TensorLists aliases;
  for (const auto& list : lists) aliases.push_back(stage_outputs(call, list));
  return aliases;
}

int64_t total_elements(const std::vector<at::Tensor>& tensors) {
  int64_t total = 0;
  for (const auto& tensor : tensors) total += tensor.numel();
  return total;
}

void check_not_empty(const char* name, const std::vector<at::Tensor>& tensors) {
  TORCH_CHECK_VALUE(!tensors.empty(), "[axon ", name, "] expected at least one tensor, got none");
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupAxon::broadcast(std::vector<at::Tensor>& tensors,
                                                           const c10d::BroadcastOptions& opts) {
  check_not_empty("broadcast", tensors);
  CollectiveCall call(*this, "broadcast", OpType::BROADCAST, opts.timeout);
  std::vector<at::Tensor> buffers;
  for (auto& tensor : tensors) buffers.push_back(call.inout(tensor));
  call.agree_on(tensors[0].scalar_type(), total_elements(tensors));
  call.set_synchronous(!opts.asyncOp);
  return call.submit([transport = transport_, buffers, opts]() mutable { return transport->broadcast(buffers, opts); },
                     tensors);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAxon::allreduce(std::vector<at::Tensor>& tensors,
                                                           const c10d::AllreduceOptions& opts) {
  check_not_empty("all_reduce", tensors);
  CollectiveCall call(*this, "all_reduce", OpType::ALLREDUCE, opts.timeout);
  const ReducePlan plan = call.plan_reduce(opts.reduceOp, tensors[0].scalar_type());
  std::vector<at::Tensor> buffers;
  for (auto& tensor : tensors) buffers.push_back(call.reduce_inout(tensor, plan));
  c10d::AllreduceOptions transport_opts = opts;
  transport_opts.reduceOp = plan.transport_op;
  call.agree_on(tensors[0].scalar_type(), total_elements(tensors));
  call.set_synchronous(!opts.asyncOp);
  return call.submit([transport = transport_, buffers,
                      transport_opts]() mutable { return transport->allreduce(buffers, transport_opts); },
                     tensors);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAxon::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                     const c10d::AllreduceCoalescedOptions& opts) {
  check_not_empty("all_reduce_coalesced", tensors);
  CollectiveCall call(*this, "all_reduce_coalesced", OpType::ALLREDUCE_COALESCED, opts.timeout);
  const ReducePlan plan = call.plan_reduce(opts.reduceOp, tensors[0].scalar_type());
  std::vector<at::Tensor> buffers;
  for (auto& tensor : tensors) buffers.push_back(call.reduce_inout(tensor, plan));
  c10d::AllreduceCoalescedOptions transport_opts = opts;
  transport_opts.reduceOp = plan.transport_op;
  call.agree_on(tensors[0].scalar_type(), total_elements(tensors));
  call.set_synchronous(!opts.asyncOp);
  return call.submit([transport = transport_, buffers,
                      transport_opts]() mutable { return transport->allreduce_coalesced(buffers, transport_opts); },
                     tensors);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAxon::reduce(std::vector<at::Tensor>& tensors,
                                                        const c10d::ReduceOptions& opts) {
  check_not_empty("reduce", tensors);
  CollectiveCall call(*this, "reduce", OpType::REDUCE, opts.timeout);
  ReducePlan plan = call.plan_reduce(opts.reduceOp, tensors[0].scalar_type());
  const bool average = plan.average && opts.rootRank == getRank();
  plan.average = average;
  std::vector<at::Tensor> buffers;
  for (auto& tensor : tensors) buffers.push_back(call.reduce_inout(tensor, plan));
  c10d::ReduceOptions transport_opts = opts;
  transport_opts.reduceOp = plan.transport_op;
  call.agree_on(tensors[0].scalar_type(), total_elements(tensors));
  call.set_synchronous(!opts.asyncOp);
  return call.submit([transport = transport_, buffers,
                      transport_opts]() mutable { return transport->reduce(buffers, transport_opts); },
                     tensors);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAxon::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                           std::vector<at::Tensor>& inputs,
                                                           const c10d::AllgatherOptions& opts) {
  check_not_empty("all_gather", inputs);
  CollectiveCall call(*this, "all_gather", OpType::ALLGATHER, opts.timeout);
  auto in = stage_inputs(call, inputs);
  auto out = stage_output_lists(call, outputs);
  call.agree_on(inputs[0].scalar_type(), total_elements(inputs));
  call.set_synchronous(!opts.asyncOp);
  return call.submit([transport = transport_, out, in, opts]() mutable { return transport->allgather(out, in, opts); },
                     flatten(outputs));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAxon::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                 const c10d::AllgatherOptions& opts) {
  CollectiveCall call(*this, "all_gather_into_tensor", OpType::_ALLGATHER_BASE, opts.timeout);
  at::Tensor in = call.input(input);
  at::Tensor out = call.output(output);
  TORCH_CHECK_VALUE(output.numel() == input.numel() * getSize(), "[axon all_gather_into_tensor] expected an output of ",
                    input.numel() * getSize(), " elements (input numel x world size ", getSize(), "), got ",
                    output.numel());
  TORCH_CHECK_TYPE(output.scalar_type() == input.scalar_type(),
                   "[axon all_gather_into_tensor] expected the output dtype ", input.scalar_type(),
                   " of the input, got ", output.scalar_type());
  call.agree_on(input.scalar_type(), input.numel());
  call.set_synchronous(!opts.asyncOp);
  return call.submit(
      [transport = transport_, out, in, opts]() mutable { return transport->_allgather_base(out, in, opts); },
      {output});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAxon::allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                                     std::vector<at::Tensor>& inputs,
                                                                     const c10d::AllgatherOptions& opts) {
  check_not_empty("all_gather_coalesced", inputs);
  CollectiveCall call(*this, "all_gather_coalesced", OpType::ALLGATHER_COALESCED, opts.timeout);
  auto in = stage_inputs(call, inputs);
  auto out = stage_output_lists(call, outputs);
  call.agree_on(inputs[0].scalar_type(), total_elements(inputs));
  call.set_synchronous(!opts.asyncOp);
  return call.submit(
      [transport = transport_, out, in, opts]() mutable { return transport->allgather_coalesced(out, in, opts); },
      flatten(outputs));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAxon::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                                 std::vector<at::Tensor>& inputs,
                                                                                 const c10d::AllgatherOptions& opts) {
  check_not_empty("all_gather_into_tensor_coalesced", inputs);
  CollectiveCall call(*this, "all_gather_into_tensor_coalesced", OpType::COALESCED, opts.timeout);
  auto in = stage_inputs(call, inputs);
  auto out = stage_outputs(call, outputs);
  call.agree_on(inputs[0].scalar_type(), total_elements(inputs));
  call.set_synchronous(!opts.asyncOp);
  return call.submit([transport = transport_, out, in,
                      opts]() mutable { return transport->allgather_into_tensor_coalesced(out, in, opts); },
                     outputs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAxon::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                        std::vector<at::Tensor>& inputs,
                                                        const c10d::GatherOptions& opts) {
  check_not_empty("gather", inputs);
  CollectiveCall call(*this, "gather", OpType::GATHER, opts.timeout);
  auto in = stage_inputs(call, inputs);
  auto out = stage_output_lists(call, outputs);
  call.agree_on(inputs[0].scalar_type(), total_elements(inputs));
  call.set_synchronous(!opts.asyncOp);
  return call.submit([transport = transport_, out, in, opts]() mutable { return transport->gather(out, in, opts); },
                     flatten(outputs));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAxon::scatter(std::vector<at::Tensor>& outputs,
                                                         std::vector<std::vector<at::Tensor>>& inputs,
                                                         const c10d::ScatterOptions& opts) {
  check_not_empty("scatter", outputs);
  CollectiveCall call(*this, "scatter", OpType::SCATTER, opts.timeout);
  auto out = stage_outputs(call, outputs);
  auto in = stage_input_lists(call, inputs);
  call.agree_on(outputs[0].scalar_type(), total_elements(outputs));
  call.set_synchronous(!opts.asyncOp);
  return call.submit([transport = transport_, out, in, opts]() mutable { return transport->scatter(out, in, opts); },
                     outputs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAxon::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                                const c10d::ReduceScatterOptions& opts) {
  check_not_empty("reduce_scatter", outputs);
  CollectiveCall call(*this, "reduce_scatter", OpType::REDUCE_SCATTER, opts.timeout);
  const ReducePlan plan = call.plan_reduce(opts.reduceOp, outputs[0].scalar_type());
  std::vector<at::Tensor> out;
  for (auto& tensor : outputs) {
    out.push_back(call.output(tensor));
    if (plan.average) call.average_after(tensor);
  }
  std::vector<std::vector<at::Tensor>> in(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (auto& tensor : inputs[i]) in[i].push_back(call.reduce_input(tensor, plan));
  }
  c10d::ReduceScatterOptions transport_opts = opts;
  transport_opts.reduceOp = plan.transport_op;
  call.agree_on(outputs[0].scalar_type(), total_elements(outputs));
  call.set_synchronous(!opts.asyncOp);
  return call.submit([transport = transport_, out, in,
                      transport_opts]() mutable { return transport->reduce_scatter(out, in, transport_opts); },
                     outputs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAxon::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                      const c10d::ReduceScatterOptions& opts) {
  CollectiveCall call(*this, "reduce_scatter_tensor", OpType::_REDUCE_SCATTER_BASE, opts.timeout);
  const ReducePlan plan = call.plan_reduce(opts.reduceOp, output.scalar_type());
  at::Tensor out = call.output(output);
  if (plan.average) call.average_after(output);
  at::Tensor in = call.reduce_input(input, plan);
  TORCH_CHECK_VALUE(input.numel() == output.numel() * getSize(), "[axon reduce_scatter_tensor] expected an input of ",
                    output.numel() * getSize(), " elements (output numel x world size ", getSize(), "), got ",
                    input.numel());
  TORCH_CHECK_TYPE(output.scalar_type() == input.scalar_type(),
                   "[axon reduce_scatter_tensor] expected the output dtype ", input.scalar_type(),
                   " of the input, got ", output.scalar_type());
  c10d::ReduceScatterOptions transport_opts = opts;
  transport_opts.reduceOp = plan.transport_op;
  call.agree_on(output.scalar_type(), output.numel());
  call.set_synchronous(!opts.asyncOp);
  return call.submit([transport = transport_, out, in,
                      transport_opts]() mutable { return transport->_reduce_scatter_base(out, in, transport_opts); },
                     {output});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAxon::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const c10d::ReduceScatterOptions& opts) {
  check_not_empty("reduce_scatter_tensor_coalesced", outputs);
  CollectiveCall call(*this, "reduce_scatter_tensor_coalesced", OpType::COALESCED, opts.timeout);
  const ReducePlan plan = call.plan_reduce(opts.reduceOp, outputs[0].scalar_type());
  std::vector<at::Tensor> out, in;
  for (auto& tensor : outputs) {
    out.push_back(call.output(tensor));
    if (plan.average) call.average_after(tensor);
  }
  for (auto& tensor : inputs) in.push_back(call.reduce_input(tensor, plan));
  c10d::ReduceScatterOptions transport_opts = opts;
  transport_opts.reduceOp = plan.transport_op;
  call.agree_on(outputs[0].scalar_type(), total_elements(outputs));
  call.set_synchronous(!opts.asyncOp);
  return call.submit(
      [transport = transport_, out, in, transport_opts]() mutable {
        return transport->reduce_scatter_tensor_coalesced(out, in, transport_opts);
      },
      outputs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAxon::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                               std::vector<int64_t>& output_split_sizes,
                                                               std::vector<int64_t>& input_split_sizes,
                                                               const c10d::AllToAllOptions& opts) {
  CollectiveCall call(*this, "all_to_all_single", OpType::ALLTOALL_BASE, opts.timeout);
  at::Tensor in = call.input(input);
  at::Tensor out = call.output(output);
  auto check_splits = [&](const std::vector<int64_t>& splits, const at::Tensor& tensor, const char* which) {
    if (splits.empty()) return;
    TORCH_CHECK_VALUE(static_cast<int>(splits.size()) == getSize(), "[axon all_to_all_single] expected ", getSize(),
                      " ", which, " split sizes (one per rank), got ", splits.size());
    int64_t rows = 0;
    for (int64_t split : splits) rows += split;
    TORCH_CHECK_VALUE(tensor.dim() > 0 && rows == tensor.size(0), "[axon all_to_all_single] ", which,
                      " split sizes add up to ", rows, " but the ", which, " has ",
                      tensor.dim() > 0 ? tensor.size(0) : 0, " rows");
  };
  check_splits(output_split_sizes, output, "output");
  check_splits(input_split_sizes, input, "input");
  call.agree_on(input.scalar_type(), -1);
  call.set_synchronous(!opts.asyncOp);
  return call.submit(
      [transport = transport_, out, in, output_split_sizes, input_split_sizes, opts]() mutable {
        return transport->alltoall_base(out, in, output_split_sizes, input_split_sizes, opts);
      },
      {output});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAxon::alltoall(std::vector<at::Tensor>& outputs,
                                                          std::vector<at::Tensor>& inputs,
                                                          const c10d::AllToAllOptions& opts) {
  check_not_empty("all_to_all", inputs);
  TORCH_CHECK_VALUE(static_cast<int>(inputs.size()) == getSize() && static_cast<int>(outputs.size()) == getSize(),
                    "[axon all_to_all] expected ", getSize(), " input and output tensors (one per rank), got ",
                    inputs.size(), " and ", outputs.size());
  // Tensors of any (uneven) sizes: one flat all_to_all_single over their
  // elements, whose outputs are copied back into the list on completion.
  CollectiveCall call(*this, "all_to_all", OpType::ALLTOALL, opts.timeout);
  std::vector<at::Tensor> flat_inputs;
  std::vector<int64_t> input_splits, output_splits;
  for (auto& tensor : inputs) {
    call.input(tensor);  // checks and protects it
    TORCH_CHECK_TYPE(tensor.scalar_type() == inputs[0].scalar_type(),
                     "[axon all_to_all] expected every tensor of dtype ", inputs[0].scalar_type(), ", got ",
                     tensor.scalar_type());
    flat_inputs.push_back(tensor.reshape({-1}));
    input_splits.push_back(tensor.numel());
  }
  int64_t output_elements = 0;
  for (auto& tensor : outputs) {
    materialize_for_write(tensor.storage());  // written after the transport, off this thread
    call.input(tensor);
    TORCH_CHECK_TYPE(tensor.scalar_type() == inputs[0].scalar_type(),
                     "[axon all_to_all] expected every tensor of dtype ", inputs[0].scalar_type(), ", got ",
                     tensor.scalar_type());
    output_splits.push_back(tensor.numel());
    output_elements += tensor.numel();
  }
  at::Tensor flat_input = at::cat(flat_inputs);  // on the current stream: ordered before the inputs-ready event
  at::Tensor flat_output = at::empty({output_elements}, inputs[0].options());
  at::Tensor in = call.input(flat_input);
  at::Tensor out = call.output(flat_output);
  call.after_transport([outputs, flat_output, output_splits]() mutable {
    int64_t offset = 0;
    for (size_t i = 0; i < outputs.size(); ++i) {
      outputs[i].copy_(flat_output.narrow(0, offset, output_splits[i]).view(outputs[i].sizes()));
      offset += output_splits[i];
    }
  });
  call.agree_on(inputs[0].scalar_type(), -1);
  call.set_synchronous(!opts.asyncOp);
  return call.submit([transport = transport_, out, in, output_splits, input_splits,
                      opts]() mutable { return transport->alltoall_base(out, in, output_splits, input_splits, opts); },
                     outputs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAxon::send(std::vector<at::Tensor>& tensors, int dst_rank, int tag) {
  check_not_empty("send", tensors);
  CollectiveCall call(*this, "send", OpType::SEND, c10d::kUnsetTimeout);
  auto buffers = stage_inputs(call, tensors);
  return call.submit(
      [transport = transport_, buffers, dst_rank, tag]() mutable { return transport->send(buffers, dst_rank, tag); },
      tensors);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAxon::recv(std::vector<at::Tensor>& tensors, int src_rank, int tag) {
  check_not_empty("recv", tensors);
  CollectiveCall call(*this, "recv", OpType::RECV, c10d::kUnsetTimeout);
  auto buffers = stage_outputs(call, tensors);
  return call.submit(
      [transport = transport_, buffers, src_rank, tag]() mutable { return transport->recv(buffers, src_rank, tag); },
      tensors, /*report_source_rank=*/true);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAxon::recvAnysource(std::vector<at::Tensor>& tensors, int tag) {
  check_not_empty("recv", tensors);
  CollectiveCall call(*this, "recv", OpType::RECVANYSOURCE, c10d::kUnsetTimeout);
  auto buffers = stage_outputs(call, tensors);
  return call.submit(
      [transport = transport_, buffers, tag]() mutable { return transport->recvAnysource(buffers, tag); }, tensors,
      /*report_source_rank=*/true);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAxon::barrier(const c10d::BarrierOptions& opts) {
  CollectiveCall call(*this, "barrier", OpType::BARRIER, opts.timeout);
  c10::DeviceIndex device = current_device();
  if (opts.device && opts.device->type() == c10::DeviceType::PrivateUse1 && opts.device->has_index()) {
    device = opts.device->index();
  } else if (!opts.device_ids.empty()) {
    device = static_cast<c10::DeviceIndex>(opts.device_ids.front());
  }
  call.use_device(device);
  // Transport's barrier over CPU: device_ids/device would name axon devices.
  c10d::BarrierOptions transport_opts;
  transport_opts.timeout = opts.timeout;
  call.agree_on(c10::kByte, 0);
  call.set_synchronous(!opts.asyncOp);
  return call.submit([transport = transport_, transport_opts]() mutable { return transport->barrier(transport_opts); },
                     {});
}

void ProcessGroupAxon::monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) {
  c10d::BarrierOptions transport_opts;
  transport_opts.timeout = opts.timeout;
  transport_->monitoredBarrier(transport_opts, wait_all_ranks);
}

}  // namespace axon::distributed
