// The c10d::Work returned by every axon collective.
//
// A collective completes in two steps: the transport (Gloo) finishes moving
// bytes on a host thread, then the collective runner queues the remaining
// device work (copy-back of staged tensors, AVG's division) on the
// completion stream and calls complete(). From then on the result is a
// stream-ordered promise, as with NCCL:
//
//   wait()        blocks the host until the transport finished (or the
//                 timeout passed: DistBackendError), then makes the caller's
//                 current stream wait for the completion stream's work.
//                 It never blocks a device worker.
//   getFuture()   a c10::ivalue::Future over the output tensors whose
//                 completion is recorded with an event on the completion
//                 stream; Future::wait() and then() callbacks order the
//                 waiting thread's streams after it (DDP chains on this).
//
// Thread-safety: complete()/fail() are called once, by the runner; every
// other method may be called from any thread.
#pragma once

#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

namespace axon::distributed {

class CollectiveWork : public c10d::Work {
 public:
  // `name` is the collective's user-facing name ("all_reduce"), used in
  // error messages; `outputs` are what result() and the future return.
  CollectiveWork(int rank, c10d::OpType type, std::string name, c10::Device device, std::vector<at::Tensor> outputs,
                 std::chrono::milliseconds timeout, uint64_t sequence);

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  int sourceRank() const override;
  std::vector<at::Tensor> result() override;
  void synchronize() override;
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  uint64_t getSequencenumber() const override { return sequence_; }

  // ---- runner side --------------------------------------------------------
  // Marks success. The calling thread's current stream for the work's device
  // must be the stream the device-side completion work was queued on.
  void complete(int source_rank = -1);
  void fail(std::exception_ptr error);

  const std::string& name() const { return name_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  // "all_reduce (collective #12 of rank 0)", for messages.
  std::string describe() const;

 private:
  const std::string name_;
  const c10::Device device_;
  const std::vector<at::Tensor> outputs_;
  const std::chrono::milliseconds timeout_;
  const uint64_t sequence_;
  int source_rank_ = -1;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

// An exception_ptr holding c10::DistBackendError(message), which Python sees
// as torch.distributed.DistBackendError.
std::exception_ptr make_backend_error(const std::string& message);

}  // namespace axon::distributed
