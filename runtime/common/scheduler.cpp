// Scheduler: handle registries, submission and shutdown. The worker loop
// lives in device_worker.cpp.

#include "scheduler.h"

#include <pthread.h>

#include <algorithm>

#include "driver_error.h"

namespace axon::common {
namespace {

// How long a host waiting for a stream spins before it sleeps: about what a
// futex sleep and wake cost it on a busy machine (measured at about 20 us
// here: Tensor.item() on an idle device took 25 us with a sleep, 4 us
// without). A wait for work that finishes within it returns without
// sleeping; a longer one gives the core up after spending little more than
// the sleep would, so the worker's kernels get both cores back.
constexpr auto kHostSpin = std::chrono::microseconds(30);

// Makes `mutex` spin briefly on contention before it sleeps in the kernel.
// Why: the host thread queuing kernels and the device's worker popping them
// take the scheduler's mutex for a few hundred nanoseconds each, hundreds of
// thousands of times a second. A plain glibc mutex sleeps (futex wait) on the
// first failed attempt, and the holder then pays a futex wake on unlock: in a
// loop of tiny adds, a fifth of the queuing thread's time went to those system
// calls, and each add took 2.5 µs instead of 1.7 (docs/benchmarks.md).
// libstdc++'s std::mutex is a pthread mutex that needs no destruction, so
// re-initializing its handle before first use keeps std::condition_variable working.
void make_adaptive(std::mutex& mutex) {
#if defined(__GLIBC__)
  pthread_mutexattr_t attributes;
  pthread_mutexattr_init(&attributes);
  pthread_mutexattr_settype(&attributes, PTHREAD_MUTEX_ADAPTIVE_NP);
  pthread_mutex_init(mutex.native_handle(), &attributes);
  pthread_mutexattr_destroy(&attributes);
#else
  (void)mutex;
#endif
}

}  // namespace

Scheduler::Scheduler(int device_count) {
  make_adaptive(mutex_);
  devices_.reserve(static_cast<std::size_t>(device_count));
  for (int device = 0; device < device_count; ++device) {
    devices_.push_back(std::make_unique<DeviceWorker>());
    devices_.back()->default_stream = create_stream(device, kStreamPriorityLeastUrgent);
    devices_.back()->default_stream->is_default = true;
  }
}

axon_stream_object* Scheduler::find_stream(axon_stream handle) const {
  if (handle == nullptr) fail(AXON_ERROR_INVALID_HANDLE, "expected a stream, got a null handle");
  if (live_streams_.count(handle) == 0) {
    fail(AXON_ERROR_INVALID_HANDLE, "stream handle ", static_cast<const void*>(handle),
         " is not a live stream (destroyed, or never created by this driver)");
  }
  return handle;
}

axon_event_object* Scheduler::find_event(axon_event handle) const {
  if (handle == nullptr) fail(AXON_ERROR_INVALID_HANDLE, "expected an event, got a null handle");
  if (live_events_.count(handle) == 0) {
    fail(AXON_ERROR_INVALID_HANDLE, "event handle ", static_cast<const void*>(handle),
         " is not a live event (destroyed, or never created by this driver)");
  }
  return handle;
}

axon_stream_object* Scheduler::create_stream(int device, int priority) {
  DeviceWorker& worker = *devices_[static_cast<std::size_t>(device)];
  auto stream = std::make_unique<axon_stream_object>();
  stream->device = device;
  stream->priority = std::clamp(priority, kStreamPriorityMostUrgent, kStreamPriorityLeastUrgent);
  stream->number = worker.next_stream_number;
  worker.streams.reserve(worker.streams.size() + 1);
  live_streams_.insert(stream.get());
  ++worker.next_stream_number;
  worker.streams.push_back(stream.get());
  return stream.release();
}

void Scheduler::destroy_stream(axon_stream_object* stream) {
  DeviceWorker& worker = *devices_[static_cast<std::size_t>(stream->device)];
  if (stream->pending_error && !worker.orphaned_error) {
    worker.orphaned_error = std::move(stream->pending_error);
  }
  worker.streams.erase(std::find(worker.streams.begin(), worker.streams.end(), stream));
  live_streams_.erase(stream);
  delete stream;
}

axon_stream_object* Scheduler::default_stream(int device) const {
  return devices_[static_cast<std::size_t>(device)]->default_stream;
}

const std::vector<axon_stream_object*>& Scheduler::streams_of(int device) const {
  return devices_[static_cast<std::size_t>(device)]->streams;
}

std::optional<PendingError>& Scheduler::orphaned_error(int device) {
  return devices_[static_cast<std::size_t>(device)]->orphaned_error;
}

axon_event_object* Scheduler::create_event(bool timing) {
  auto event = std::make_unique<axon_event_object>();
  event->state = std::make_shared<EventState>(timing);
  live_events_.insert(event.get());
  return event.release();
}

void Scheduler::destroy_event(axon_event_object* event) {
  live_events_.erase(event);
  delete event;  // queued markers keep the shared state alive
}

std::uint64_t Scheduler::submit(axon_stream_object* stream, QueueItem&& item) {
  if (stopping_) {
    fail(AXON_ERROR_SHUT_DOWN, "the runtime has been shut down; no more work is accepted");
  }
  DeviceWorker& worker = *devices_[static_cast<std::size_t>(stream->device)];
  if (!worker.started) start_worker(stream->device);
  item.device_order = worker.next_order++;
  activity_log_.mark(item.activity);  // on the queueing thread, which owns the tag and label
  stream->queue.push_back(std::move(item));
  ++stream->submitted;
  worker.submissions.fetch_add(1, std::memory_order_release);
  if (worker.sleeping) worker.wake.notify_one();
  return stream->submitted;
}

bool Scheduler::idle_for_inline_work(const axon_stream_object* stream) {
  if (stopping_) {
    fail(AXON_ERROR_SHUT_DOWN, "the runtime has been shut down; no more work is accepted");
  }
  if (activity_log_.recording()) return false;
  // The whole device, not only the stream: the device runs one item at a
  // time, so work run in its place must find it with nothing to do, as a
  // queued item would to start at once (a busy or held device runs queued
  // work by priority, axon/stream.h).
  for (const axon_stream_object* other : streams_of(stream->device)) {
    if (other->completed != other->submitted) return false;
  }
  return true;
}

void Scheduler::start_worker(int device) {
  DeviceWorker& worker = *devices_[static_cast<std::size_t>(device)];
  worker.thread = std::thread([this, device] { run_worker(device); });
  worker.started = true;
}

std::string Scheduler::describe_stream(const axon_stream_object* stream) {
  if (stream->is_default) return describe("the default stream of device ", stream->device);
  return describe("stream ", stream->number, " of device ", stream->device);
}

void Scheduler::shutdown() {
  refuse_waiting_on_worker_thread();
  std::vector<std::thread*> started;
  {
    Lock guard(mutex_);
    stopping_ = true;
    for (auto& worker : devices_) {
      if (worker->started) started.push_back(&worker->thread);
      worker->wake.notify_one();
    }
  }
  // Workers leave once every queue of their device is empty.
  for (std::thread* thread : started) {
    if (thread->joinable()) thread->join();
  }
}

void Scheduler::synchronize_device(int device) {
  Lock lock(mutex_);
  // Wait for the work queued so far, not for work other threads keep adding.
  std::vector<StreamTicket> targets;
  for (axon_stream_object* stream : streams_of(device)) {
    targets.emplace_back(stream, stream->submitted);
  }
  wait_for_tickets(lock, targets);
  // Report the earliest failure of the device and clear all of them.
  std::optional<PendingError> earliest = std::move(orphaned_error(device));
  orphaned_error(device).reset();
  for (axon_stream_object* stream : streams_of(device)) {
    if (!stream->pending_error) continue;
    if (!earliest || stream->pending_error->failure_order < earliest->failure_order) {
      earliest = std::move(stream->pending_error);
    }
    stream->pending_error.reset();
  }
  if (earliest) {
    throw DriverError(earliest->status, earliest->message);
  }
}

void Scheduler::wait_for_tickets(Lock& lock, const std::vector<StreamTicket>& targets) {
  refuse_waiting_on_worker_thread();
  ++waiting_hosts_;
  const auto spin_deadline = std::chrono::steady_clock::now() + kHostSpin;
  for (;;) {
    bool reached = true;
    for (const auto& [stream, ticket] : targets) {
      if (!is_live_stream(stream) || stream->completed >= ticket) continue;  // destroyed streams were drained first
      reached = false;
      stream->host_wake_ticket = std::min(stream->host_wake_ticket, ticket);
    }
    if (reached) break;
    if (std::chrono::steady_clock::now() < spin_deadline) {
      const std::uint64_t seen = completions_.load(std::memory_order_acquire);
      lock.unlock();
      spin_until_changed(completions_, seen, spin_deadline);
      lock.lock();
      continue;  // checked again under the lock before any sleep, so no wake is missed
    }
    host_wakeup_.wait(lock);
  }
  --waiting_hosts_;
}

bool Scheduler::wait_until_idle_for(std::chrono::milliseconds timeout) {
  Lock lock(mutex_);
  auto idle = [&] {
    for (const auto& device : devices_) {
      for (const axon_stream_object* stream : device->streams) {
        if (stream->completed < stream->submitted) return false;
      }
    }
    return true;
  };
  ++waiting_hosts_;
  ++hosts_waiting_on_anything_;
  const bool drained = host_wakeup_.wait_for(lock, timeout, idle);
  --hosts_waiting_on_anything_;
  --waiting_hosts_;
  return drained;
}

}  // namespace axon::common
