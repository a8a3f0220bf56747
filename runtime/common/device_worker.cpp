// The per-device worker: picks the most urgent ready stream and runs its head.

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <limits>

#include "driver_error.h"
#include "scheduler.h"
#include "status_names.h"

namespace axon::common {
namespace {

// Tells the core the thread is spinning (frees execution resources for a
// sibling hyperthread); a no-op where there is no such instruction.
inline void pause_instruction() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// How long an idle worker spins for the next submission before it sleeps:
// long enough to cover the host's dispatch of one small operator (a few
// microseconds in Python), short enough that an idle device gives its core
// back at once for practical purposes.
constexpr auto kWorkerSpin = std::chrono::microseconds(50);

// Device whose worker is the current thread, -1 on every other thread.
thread_local int current_worker_device = -1;

template <typename... Handlers>
struct Overloaded : Handlers... {
  using Handlers::operator()...;
};
template <typename... Handlers>
Overloaded(Handlers...) -> Overloaded<Handlers...>;

}  // namespace

axon_status run_host_task(const axon_host_function& task, std::string* message) {
  char buffer[AXON_TASK_MESSAGE_CAPACITY] = {};
  axon_status status = AXON_SUCCESS;
  try {
    status = task.run(task.user_data, buffer);
    buffer[AXON_TASK_MESSAGE_CAPACITY - 1] = '\0';
    if (status != AXON_SUCCESS) {
      *message = buffer[0] != '\0' ? buffer : "(the task wrote no message)";
    }
  } catch (const std::exception& error) {
    status = AXON_ERROR_TASK_FAILED;
    *message = describe("task threw an exception: ", error.what());
  } catch (...) {
    status = AXON_ERROR_TASK_FAILED;
    *message = "task threw an exception of unknown type";
  }
  return status;
}

void Scheduler::refuse_waiting_on_worker_thread() const {
  if (current_worker_device >= 0) {
    fail(AXON_ERROR_INVALID_VALUE, "cannot block inside a task running on device ", current_worker_device,
         "'s worker: waiting there would deadlock the device");
  }
}

axon_stream_object* Scheduler::pick_ready_stream(const DeviceWorker& worker) const {
  axon_stream_object* chosen = nullptr;
  for (axon_stream_object* stream : worker.streams) {
    if (stream->queue.empty()) continue;
    const QueueItem& head = stream->queue.front();
    if (const auto* wait = std::get_if<EventWaitMarker>(&head.work)) {
      if (!wait->event->recording_complete(wait->recording)) continue;
    }
    if (chosen == nullptr || stream->priority < chosen->priority ||
        (stream->priority == chosen->priority && head.device_order < chosen->queue.front().device_order)) {
      chosen = stream;
    }
  }
  return chosen;
}

void Scheduler::run_worker(int device) {
  current_worker_device = device;
  Lock lock(mutex_);
  DeviceWorker& worker = *devices_[static_cast<std::size_t>(device)];
  for (;;) {
    axon_stream_object* stream = pick_ready_stream(worker);
    if (stream == nullptr) {
      const bool drained = std::all_of(worker.streams.begin(), worker.streams.end(),
                                       [](const axon_stream_object* s) { return s->queue.empty(); });
      if (stopping_ && drained) return;
      if (drained) {
        // Spin a little before sleeping: a host queuing small kernels back to
        // back then hands them over without a futex wake per submission,
        // which cost more than the kernels themselves (see kWorkerSpin).
        const std::uint64_t seen = worker.submissions.load(std::memory_order_acquire);
        lock.unlock();
        spin_until_changed(worker.submissions, seen, std::chrono::steady_clock::now() + kWorkerSpin);
        lock.lock();
        if (worker.submissions.load(std::memory_order_acquire) != seen || stopping_) continue;
      }
      worker.sleeping = true;
      worker.wake.wait(lock);
      worker.sleeping = false;
      continue;
    }
    QueueItem item = std::move(stream->queue.front());
    stream->queue.pop_front();
    if (std::holds_alternative<EventRecordMarker>(item.work) || std::holds_alternative<EventWaitMarker>(item.work)) {
      complete_marker(stream, item);
    } else {
      lock.unlock();
      axon_status status = AXON_SUCCESS;
      std::string message;
      const std::int64_t started_ns = item.activity.marked ? ActivityLog::now_ns() : 0;
      execute_work(item, &status, &message);
      if (item.activity.marked) {
        activity_log_.add(item.activity, device, stream->number, status, started_ns, ActivityLog::now_ns());
      }
      lock.lock();
      try {
        finish_work(stream, item, status, message);
      } catch (...) {
        // Only formatting the detail can throw (out of memory); keep the
        // failure itself so it is not silently lost.
        try {
          if (item.blocking_outcome) {
            item.blocking_outcome->status = status;
          } else if (!stream->pending_error) {
            stream->pending_error =
                PendingError{"a task failed (detail lost: out of host memory)", next_failure_order_++};
          }
        } catch (...) {
        }
      }
    }
    ++stream->completed;
    completions_.fetch_add(1, std::memory_order_release);
    if (waiting_hosts_ > 0 && (hosts_waiting_on_anything_ > 0 || stream->completed >= stream->host_wake_ticket)) {
      stream->host_wake_ticket = std::numeric_limits<std::uint64_t>::max();  // waiters still short re-register
      host_wakeup_.notify_all();
    }
  }
}

void Scheduler::spin_until_changed(const std::atomic<std::uint64_t>& counter, std::uint64_t seen,
                                   std::chrono::steady_clock::time_point deadline) {
  while (counter.load(std::memory_order_acquire) == seen) {
    for (int i = 0; i < 64; ++i) pause_instruction();
    if (std::chrono::steady_clock::now() >= deadline) return;
  }
}

void Scheduler::complete_marker(axon_stream_object* stream, QueueItem& item) {
  auto* record = std::get_if<EventRecordMarker>(&item.work);
  if (record == nullptr) return;  // a ready wait has nothing left to do
  record->event->complete_recording(record->recording, std::chrono::steady_clock::now());
  // Streams of any device may be waiting on this recording.
  for (auto& other : devices_) {
    if (other->started && other.get() != devices_[static_cast<std::size_t>(stream->device)].get()) {
      other->wake.notify_one();
    }
  }
}

void Scheduler::execute_work(QueueItem& item, axon_status* status, std::string* message) {
  std::visit(Overloaded{
                 [&](OwnedTask& task) {
                   *status = run_host_task(task.task(), message);
                   // Released before completion is published, so a host that
                   // synchronizes sees the task's resources already let go (a
                   // release callback may hand them to its own thread instead,
                   // as Axon's host kernels do for launches that hold only aliases).
                   task.release();
                 },
                 [&](DeviceWork& device_work) {
                   try {
                     *status = device_work.run(message);
                   } catch (const std::exception& error) {
                     *status = AXON_ERROR_TASK_FAILED;
                     *message = error.what();
                   }
                   device_work.run = nullptr;  // let go of what the work held before completion is published
                 },
                 [](CopyWork& copy) { std::memmove(copy.destination, copy.source, copy.bytes); },
                 [](SetWork& set) { std::memset(set.destination, set.value, set.bytes); },
                 [](EventRecordMarker&) {},
                 [](EventWaitMarker&) {},
             },
             item.work);
  // Drop a staging buffer now rather than under the lock.
  if (auto* copy = std::get_if<CopyWork>(&item.work)) copy->staged_source.reset();
}

void Scheduler::finish_work(axon_stream_object* stream, QueueItem& item, axon_status status,
                            const std::string& message) {
  if (status == AXON_SUCCESS) return;
  const std::string detail =
      describe("task failed on ", describe_stream(stream), " with ", status_name(status), ": ", message);
  if (item.blocking_outcome) {
    item.blocking_outcome->status = status;
    item.blocking_outcome->message = detail;
    return;
  }
  // The first failure since the last synchronize is the one worth reporting.
  const axon_status reported = axon_status_is_task_failure(status) ? status : AXON_ERROR_TASK_FAILED;
  if (!stream->pending_error) stream->pending_error = PendingError{detail, next_failure_order_++, reported};
}

}  // namespace axon::common
