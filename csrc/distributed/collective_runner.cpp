#include "distributed/collective_runner.h"

#include <c10/core/StreamGuard.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cctype>
#include <exception>
#include <string>
#include <utility>

#include "axon/status.h"

namespace axon::distributed {
namespace {

std::string failure_message(const CollectiveWork& work, const char* stage, const std::string& detail) {
  std::string message = c10::str("[axon] ", work.describe(), " failed while ", stage, ": ", detail);
  // Gloo and the TCPStore word their timeouts differently ("Operation timed out!", "Timed out waiting 4000ms",
  // "wait timeout after 4000ms", "Socket Timeout"); whichever fires first, the user gets the likely causes.
  std::string lowered = detail;
  std::transform(lowered.begin(), lowered.end(), lowered.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lowered.find("timed out") != std::string::npos || lowered.find("timeout") != std::string::npos) {
    message += c10::str(" (timeout ", work.timeout().count(),
                        " ms: a peer may have died, be stuck, or not have called the same collective)");
  }
  return message;
}

std::exception_ptr describe_failure(const CollectiveWork& work, const char* stage) {
  try {
    throw;
  } catch (const c10::Error& error) {
    return make_backend_error(failure_message(work, stage, error.what_without_backtrace()));
  } catch (const std::exception& error) {
    return make_backend_error(failure_message(work, stage, error.what()));
  } catch (...) {
    return make_backend_error(failure_message(work, stage, "unknown error"));
  }
}

}  // namespace

CollectiveRunner::CollectiveRunner() : launcher_([this] { run_launcher(); }), completer_([this] { run_completer(); }) {}

CollectiveRunner::~CollectiveRunner() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  launch_ready_.notify_all();
  complete_ready_.notify_all();
  launcher_.join();
  completer_.join();
}

void CollectiveRunner::enqueue(std::unique_ptr<CollectiveJob> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++in_flight_;
    to_launch_.push_back(std::move(job));
  }
  launch_ready_.notify_one();
}

void CollectiveRunner::run_launcher() {
  for (;;) {
    std::unique_ptr<CollectiveJob> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      launch_ready_.wait(lock, [this] { return stopping_ || !to_launch_.empty(); });
      if (to_launch_.empty()) {
        launcher_done_ = true;
        complete_ready_.notify_all();
        return;
      }
      job = std::move(to_launch_.front());
      to_launch_.pop_front();
    }
    launch_job(*job);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      to_complete_.push_back(std::move(job));
    }
    complete_ready_.notify_one();
  }
}

bool CollectiveRunner::run_inline_if_idle(std::unique_ptr<CollectiveJob>& job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (in_flight_ != 0) return false;
    ++in_flight_;
  }
  launch_job(*job);
  finish_job(*job);
  job.reset();
  std::lock_guard<std::mutex> lock(mutex_);
  --in_flight_;
  return true;
}

void CollectiveRunner::launch_job(CollectiveJob& job) {
  // The cross-rank check reads no tensor data: it runs first, overlapping
  // whatever the device still has to compute before the inputs are ready.
  const char* stage = "checking that the ranks agree";
  try {
    if (job.verify) job.verify();
  } catch (...) {
    job.work->fail(describe_failure(*job.work, stage));
  }
  // A host thread may block on a device event; the device's worker is
  // never asked to wait for the transport.
  const axon_status reached = axon_event_synchronize(job.inputs_ready);
  axon_event_destroy(job.inputs_ready);
  job.inputs_ready = nullptr;
  if (job.work->isCompleted()) return;  // the check failed
  if (reached != AXON_SUCCESS) {
    job.work->fail(make_backend_error(
        c10::str("[axon] ", job.work->describe(), " could not wait for its inputs: ", axon_status_name(reached))));
    return;
  }
  stage = "starting the transport";
  try {
    job.transport_work = job.start();
  } catch (...) {
    job.work->fail(describe_failure(*job.work, stage));
  }
}

void CollectiveRunner::run_completer() {
  for (;;) {
    std::unique_ptr<CollectiveJob> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      complete_ready_.wait(lock, [this] { return launcher_done_ || !to_complete_.empty(); });
      if (to_complete_.empty()) return;
      job = std::move(to_complete_.front());
      to_complete_.pop_front();
    }
    finish_job(*job);
    // Dropping the job releases the tensors; their record_stream users keep
    // the memory from reuse until the finishing steps ran.
    job.reset();
    std::lock_guard<std::mutex> lock(mutex_);
    --in_flight_;
  }
}

void CollectiveRunner::finish_job(CollectiveJob& job) {
  CollectiveWork& work = *job.work;
  // Drops the job's references before the Work completes, so that memory the
  // caller released is back in the allocator once wait() returns (the
  // record_stream users keep it from reuse until the queued steps ran).
  auto release = [&job] {
    job.start = nullptr;
    job.verify = nullptr;
    job.finish_steps.clear();
    job.keep_alive.clear();
  };
  if (!job.transport_work) {  // failed to start; already reported
    release();
    return;
  }
  int source_rank = -1;
  try {
    job.transport_work->wait(work.timeout());
    if (job.report_source_rank) source_rank = job.transport_work->sourceRank();
  } catch (...) {
    release();
    work.fail(describe_failure(work, "moving data"));
    return;
  }
  try {
    c10::StreamGuard guard(*job.completion_stream);
    for (auto& step : job.finish_steps) step();
    release();
    work.complete(source_rank);
  } catch (...) {
    release();
    work.fail(describe_failure(work, "finishing on the device"));
  }
}

}  // namespace axon::distributed
