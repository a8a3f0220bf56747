// The host side of a process group: two threads that drive collectives
// between the device and the transport.
//
//   launcher   waits (on the host, never on a device worker) until the
//              device reached the collective's inputs-ready event, then
//              starts the transport operation, which returns at once.
//   completer  waits for each started transport operation in issue order
//              (bounded by the collective's timeout), queues the job's
//              device-side finishing steps on the completion stream and
//              completes the Work.
//
// Splitting the two lets many operations be in flight at once, which
// batched point-to-point needs (both peers post a send before either
// waits) and which keeps the transport busy. Collectives start in issue
// order, which Gloo requires to be the same on every rank.
//
// Thread-safety: enqueue() may be called from any thread. The destructor
// drains what was enqueued (transport waits are bounded by timeouts).
#pragma once

#include <c10/core/Stream.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "axon/event.h"
#include "distributed/collective_work.h"

namespace axon::distributed {

struct CollectiveJob {
  c10::intrusive_ptr<CollectiveWork> work;
  // Recorded on the issue stream after the inputs (and staging copies);
  // owned by the job, destroyed by the launcher once reached.
  axon_event inputs_ready = nullptr;
  // Checks that every rank issued a matching collective before any data
  // moves (launcher thread; may be empty). Throws on disagreement.
  std::function<void()> verify;
  // Starts the transport operation over host aliases (launcher thread).
  std::function<c10::intrusive_ptr<c10d::Work>()> start;
  // Device work after the transport finished, queued on `completion_stream`
  // (completer thread), e.g. copying staged buffers back.
  std::vector<std::function<void()>> finish_steps;
  std::optional<c10::Stream> completion_stream;
  // Tensors the transport reads or writes: alive until the job is done.
  std::vector<at::Tensor> keep_alive;
  // Pinned host buffers the transport uses for device memory the host cannot address.
  std::vector<at::Tensor> host_buffers;
  c10::intrusive_ptr<c10d::Work> transport_work;
  bool report_source_rank = false;
};

class CollectiveRunner {
 public:
  CollectiveRunner();
  ~CollectiveRunner();
  CollectiveRunner(const CollectiveRunner&) = delete;
  CollectiveRunner& operator=(const CollectiveRunner&) = delete;

  void enqueue(std::unique_ptr<CollectiveJob> job);

  // Runs `job` to completion on the calling thread if nothing is queued or
  // in flight (a synchronous collective then costs no thread hand-offs);
  // returns false, leaving `job` untouched, otherwise.
  bool run_inline_if_idle(std::unique_ptr<CollectiveJob>& job);

 private:
  void run_launcher();
  void run_completer();
  static void launch_job(CollectiveJob& job);
  static void finish_job(CollectiveJob& job);

  std::mutex mutex_;
  std::condition_variable launch_ready_;
  std::condition_variable complete_ready_;
  std::deque<std::unique_ptr<CollectiveJob>> to_launch_;
  std::deque<std::unique_ptr<CollectiveJob>> to_complete_;
  bool stopping_ = false;
  bool launcher_done_ = false;
  int in_flight_ = 0;  // enqueued or running inline, not yet finished
  std::thread launcher_;
  std::thread completer_;
};

}  // namespace axon::distributed
