// Scheduler: stream queues and their execution, shared by Axon's drivers.
//
// Each device has one worker thread, started on the first submission, that
// drives the device: it runs host work itself (emulated device memory is host
// memory) and hands device work to the chip (DeviceWork, e.g. PJRT calls). It repeatedly picks, among the device's
// streams whose head item is ready, the one with the most urgent priority (ties go to the earliest submission), runs
// that head item and pops it. A head that waits on an event recording is simply not ready; it never blocks the worker.
//
// One mutex guards all queues, stream counters and event states, which keeps
// cross-device waits simple: completing an event recording wakes the workers
// of all devices. Work itself (tasks, copies, sets) runs outside the mutex.
//
// Methods taking a Lock& (or documented so) require the caller to hold lock().
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "activity_log.h"
#include "axon/event.h"
#include "axon/stream.h"
#include "event_state.h"
#include "queue_item.h"
#include "stream_state.h"

namespace axon::common {

// Priorities: 0 (least urgent, the default) down to -2 (most urgent).
constexpr int kStreamPriorityLeastUrgent = 0;
constexpr int kStreamPriorityMostUrgent = -2;

class Scheduler {
 public:
  using Lock = std::unique_lock<std::mutex>;

  // Creates every device's default stream; workers start lazily.
  explicit Scheduler(int device_count);
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  Lock lock() { return Lock(mutex_); }

  // Records of when marked work ran (axon/activity.h); thread-safe, no lock needed.
  ActivityLog& activity() { return activity_log_; }

  // ---- under the lock -----------------------------------------------------
  // Throws DriverError(AXON_ERROR_INVALID_HANDLE) for null or destroyed handles.
  axon_stream_object* find_stream(axon_stream handle) const;
  axon_event_object* find_event(axon_event handle) const;
  bool is_live_stream(const axon_stream_object* stream) const { return live_streams_.count(stream) != 0; }

  axon_stream_object* create_stream(int device, int priority);
  // The stream must be drained; its pending error moves to the device.
  void destroy_stream(axon_stream_object* stream);
  axon_stream_object* default_stream(int device) const;
  const std::vector<axon_stream_object*>& streams_of(int device) const;
  // Whether host work may run on the calling thread in `stream`'s place
  // (axon_stream_run_host_function_if_idle): everything queued on its device
  // has finished, and no activity is being recorded. Throws
  // DriverError(AXON_ERROR_SHUT_DOWN) after shutdown began.
  bool idle_for_inline_work(const axon_stream_object* stream);
  // Failure of a destroyed stream, reported by the next device synchronize.
  std::optional<PendingError>& orphaned_error(int device);

  axon_event_object* create_event(bool timing);
  void destroy_event(axon_event_object* event);

  // Queues `item` last on `stream`. Returns its ticket: the item has finished
  // once stream->completed >= ticket. Throws DriverError(AXON_ERROR_SHUT_DOWN)
  // after shutdown began.
  std::uint64_t submit(axon_stream_object* stream, QueueItem&& item);

  // Blocks (releasing the lock) until `ready()` holds, checking it each time
  // any item of any device completes. Refused on a device worker thread,
  // where waiting would deadlock the device.
  template <typename Predicate>
  void wait_until(Lock& lock, Predicate ready) {
    refuse_waiting_on_worker_thread();
    ++waiting_hosts_;
    ++hosts_waiting_on_anything_;
    host_wakeup_.wait(lock, ready);
    --hosts_waiting_on_anything_;
    --waiting_hosts_;
  }

  // A stream and the ticket (see submit) a host waits for on it.
  using StreamTicket = std::pair<axon_stream_object*, std::uint64_t>;

  // Blocks (releasing the lock) until every stream of `targets` has finished
  // the item of its ticket or is destroyed. Woken only when one of those
  // items finishes, not by every completion: a host waiting for a long queue
  // of small kernels would otherwise be woken (a futex wake and a context
  // switch, on a core the worker needs) once per kernel. Spins for up to
  // kHostSpin first, so a wait for work about to finish (reading a scalar
  // back) costs no futex sleep and wake. Refused on a device worker thread.
  void wait_for_tickets(Lock& lock, const std::vector<StreamTicket>& targets);

  // axon_device_synchronize: waits (taking the lock) for the work queued so
  // far on every stream of `device`, then throws the device's earliest
  // pending failure, clearing all of them.
  void synchronize_device(int device);

  // "stream 2 of device 0", for messages.
  static std::string describe_stream(const axon_stream_object* stream);

  // ---- without the lock ---------------------------------------------------
  // Refuses new submissions, drains every queue and joins the workers.
  void shutdown();

  // Waits until every stream of every device is empty, or `timeout` passes;
  // true if idle. Used before fork(), so no kernel is midway (holding locks
  // or half-initialized statics a child would inherit) when the process is
  // copied. Never waits on a worker thread.
  bool wait_until_idle_for(std::chrono::milliseconds timeout);

 private:
  struct DeviceWorker {
    std::vector<axon_stream_object*> streams;
    axon_stream_object* default_stream = nullptr;
    std::condition_variable wake;
    bool sleeping = false;  // waiting on `wake`: only then does a submission signal it
    // Items queued on the device so far; read without the lock by the idle worker's spin.
    std::atomic<std::uint64_t> submissions{0};
    std::thread thread;
    bool started = false;
    std::uint64_t next_order = 0;
    int next_stream_number = 0;
    std::optional<PendingError> orphaned_error;
  };

  void refuse_waiting_on_worker_thread() const;
  void start_worker(int device);
  void run_worker(int device);
  // Spins (without the lock) until `counter` moves past `seen` or `deadline`
  // passes: a worker waiting for a submission, a host for a completion.
  static void spin_until_changed(const std::atomic<std::uint64_t>& counter, std::uint64_t seen,
                                 std::chrono::steady_clock::time_point deadline);
  axon_stream_object* pick_ready_stream(const DeviceWorker& worker) const;
  void complete_marker(axon_stream_object* stream, QueueItem& item);
  void execute_work(QueueItem& item, axon_status* status, std::string* message);
  void finish_work(axon_stream_object* stream, QueueItem& item, axon_status status, const std::string& message);

  std::mutex mutex_;
  std::condition_variable host_wakeup_;
  int waiting_hosts_ = 0;
  int hosts_waiting_on_anything_ = 0;  // in wait_until: woken by every completion
  // Items completed on all devices so far; read without the lock by a waiting host's spin.
  std::atomic<std::uint64_t> completions_{0};
  bool stopping_ = false;
  std::uint64_t next_failure_order_ = 0;
  std::vector<std::unique_ptr<DeviceWorker>> devices_;
  std::unordered_set<const axon_stream_object*> live_streams_;
  std::unordered_set<const axon_event_object*> live_events_;
  ActivityLog activity_log_;
};

}  // namespace axon::common
