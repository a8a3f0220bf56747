// ProcessGroupAxon: the c10d backend for axon tensors.
//
// Bytes move with a transport backend created by the caller with the same
// store, rank and size: PyTorch's own ProcessGroupGloo, which works within a
// machine and across machines over TCP. The transport runs on CPU aliases of
// the axon memory (the emulated device's host view), so contiguous tensors
// are never copied; non-contiguous ones are staged through contiguous
// buffers on the device.
//
// Streams, as with NCCL: each device has an issue stream and a completion
// stream (pooled, most urgent priority). A collective records an inputs-
// ready event on the caller's current stream (or, when tensors must be
// staged, orders the issue stream after it, stages there and records the
// event there); the runner's host thread waits for that event before the
// transport touches memory. When the transport is done, finishing steps
// (copy-back, AVG's division) run on the completion stream and the Work
// completes with an event there (see collective_work.h). Every tensor a
// pending collective uses is kept alive by the job until the transport
// finished, and record_stream'ed on the collective's streams that still
// have device work queued on it, so the caching allocator cannot hand its
// memory out early.
//
// Reduce ops: SUM, PRODUCT, MIN, MAX, BAND, BOR, BXOR go to the transport;
// AVG is a SUM followed by a division on the device; PREMUL_SUM multiplies
// (scalar or one-element tensor factor) into a staging buffer before a SUM.
//
// Errors: bad arguments (non-axon tensors, tensors on different devices,
// sparse tensors, AVG on integers, wrong output sizes) raise at the call.
// Before data moves, the ranks compare (collective, dtype, element count)
// with one small all_gather (AXON_DISTRIBUTED_CHECKS=0 skips it), so a
// mismatch fails on every rank instead of aborting inside Gloo. Transport
// failures (a dead peer, a timeout) complete the Work with DistBackendError,
// raised by wait() within the group's timeout.
//
// Threads: collectives start in issue order on the runner's host threads
// (collective_runner.h); a synchronous call (opts.asyncOp false) with
// nothing in flight runs on the calling thread instead.
#pragma once

#include <c10/core/Stream.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "distributed/collective_runner.h"

namespace axon::distributed {

class ProcessGroupAxon : public c10d::Backend {
 public:
  // `transport` must be a backend over the same ranks (ProcessGroupGloo),
  // created with its own store prefix.
  ProcessGroupAxon(int rank, int size, std::chrono::milliseconds timeout, c10::intrusive_ptr<c10d::Backend> transport);
  ~ProcessGroupAxon() override;

  const std::string getBackendName() const override { return "axon"; }
  // The transport's options: ProcessGroup::splitGroup hands the same
  // options to every backend of a group, Gloo's included, which needs its own.
  c10::intrusive_ptr<Options> getBackendOptions() override { return transport_->getBackendOptions(); }
  bool supportsSplitting() const override { return true; }
  bool supportsCoalescing() const override { return true; }
  void setTimeout(std::chrono::milliseconds timeout) override;
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;
  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>& store, const std::vector<int>& ranks,
                                          const c10::intrusive_ptr<Options>& options) override;
  void setSequenceNumberForGroup() override;
  uint64_t getSequenceNumberForGroup() override;
  void abort() override;
  void shutdown() override;

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_split_sizes,
                                               std::vector<int64_t>& input_split_sizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) override;

  // ---- used by CollectiveCall ---------------------------------------------
  c10d::Backend& transport() { return *transport_; }
  const c10::intrusive_ptr<c10d::Backend>& transport_handle() { return transport_; }
  // The device's issue and completion streams (created on first use).
  c10::Stream issue_stream(c10::DeviceIndex device);
  c10::Stream completion_stream(c10::DeviceIndex device);
  std::chrono::milliseconds timeout_for(std::chrono::milliseconds requested) const;
  uint64_t next_sequence() { return ++sequence_; }
  // Cross-rank agreement checks (AXON_DISTRIBUTED_CHECKS, default on).
  bool checks_enabled() const { return checks_enabled_; }
  // Hands the job to the runner (or runs it inline when `synchronous` and
  // the runner is idle); remembers its work while coalescing.
  void submit(std::unique_ptr<CollectiveJob> job, bool synchronous);

 private:
  struct DeviceStreams {
    c10::Stream issue;
    c10::Stream completion;
  };
  const DeviceStreams& streams_of(c10::DeviceIndex device);

  c10::intrusive_ptr<c10d::Backend> transport_;
  std::atomic<int64_t> timeout_ms_;
  std::atomic<uint64_t> sequence_{0};
  const bool checks_enabled_;

  std::mutex mutex_;
  std::map<c10::DeviceIndex, DeviceStreams> streams_;
  bool coalescing_ = false;
  std::vector<c10::intrusive_ptr<CollectiveWork>> coalesced_;

  // Last member: its destructor drains the jobs, which use the rest.
  std::unique_ptr<CollectiveRunner> runner_;
};

}  // namespace axon::distributed
