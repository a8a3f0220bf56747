#include "host_execution/stream_launch.h"

#include <ATen/core/LegacyTypeDispatch.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <exception>
#include <string>

#include "core/check.h"
#include "core/host_waits.h"
#include "host_execution/one_host_thread.h"
#include "host_execution/openmp_helper_parking.h"
#include "host_execution/program_thread_teams.h"
#include "host_execution/worker_warnings.h"
#include "profiler/device_activity.h"

namespace axon {
namespace {

std::atomic<int64_t> single_thread_launch_count{0};

// Host kernels queued and started so far, all streams together: their
// difference, taken by a kernel as it starts, is how many wait behind it.
std::atomic<int64_t> queued_launch_count{0};
std::atomic<int64_t> started_launch_count{0};

// The threads a kernel covering `bytes` runs with.
LaunchThreads launch_threads(std::size_t bytes, TeamUse team_use) {
  if (bytes >= kSingleThreadBelowBytes || team_use == TeamUse::kForResults) return LaunchThreads::kTeam;
  if (team_use == TeamUse::kForWork && bytes >= kTeamAtAnySizeFromBytes) return LaunchThreads::kTeamForWork;
  return LaunchThreads::kAlone;
}

// Set on a thread once it has run a host kernel: a device's worker, whose
// OpenMP team is the one the kernels run with.
thread_local bool runs_kernels = false;

std::atomic<int64_t> work_kernels_alone{0};
std::atomic<int64_t> work_kernels_on_team{0};

// Whether a kTeamForWork kernel takes the team, with `waiting` kernels
// queued behind it (stream_launch.h, LaunchThreads, says why).
bool team_for_work(int64_t waiting) {
  const bool team = host_thread_waiting() && (!helpers_parked() || waiting >= kKernelsWaitingToReleaseHelpers);
  (team ? work_kernels_on_team : work_kernels_alone).fetch_add(1, std::memory_order_relaxed);
  return team;
}

// The task status naming `error`'s kind, so that the error raised at
// synchronization has the CPU kernel's Python type (see core/check.cpp).
axon_status failure_status(const c10::Error& error) {
  if (dynamic_cast<const c10::IndexError*>(&error)) return AXON_ERROR_TASK_OUT_OF_RANGE;
  if (dynamic_cast<const c10::ValueError*>(&error)) return AXON_ERROR_TASK_INVALID_ARGUMENT;
  if (dynamic_cast<const c10::TypeError*>(&error)) return AXON_ERROR_TASK_WRONG_TYPE;
  if (dynamic_cast<const c10::NotImplementedError*>(&error)) return AXON_ERROR_TASK_UNSUPPORTED;
  if (dynamic_cast<const c10::LinAlgError*>(&error)) return AXON_ERROR_TASK_NUMERICAL;
  return AXON_ERROR_TASK_FAILED;
}

// A launch whose body is a function: the callers that queue few launches,
// or whose captures need more than the deferred-alias rules allow.
class FunctionLaunch final : public HostLaunch {
 public:
  FunctionLaunch(std::string name, std::function<void()> body) : name_(std::move(name)), body_(std::move(body)) {}
  const char* name() const { return name_.c_str(); }
  void run() override { body_(); }

 private:
  std::string name_;  // the kernel name, where the caller's may not outlive the launch
  std::function<void()> body_;
};

}  // namespace

// What queues launches and lets go of them (HostLaunch's private fields are its own).
struct LaunchQueuing {
  // Launches the worker has run, waiting to be destroyed by a queuing thread.
  // Why: a launch is built on the thread that queues it (its closure, the
  // argument aliases' TensorImpls and storages); destroyed on the worker, every
  // one of those frees would go back to the queuing thread's malloc arena under
  // that arena's lock, which the queuing thread is taking at the same time to
  // build the next launch. On small kernels that contention cost more than the
  // kernels (futex waits in malloc were a fifth of a tiny add's time).
  // A push-only stack emptied whole, so no ABA problem.
  static inline std::atomic<HostLaunch*> finished_launches{nullptr};

  static void destroy_finished_launches() {
    HostLaunch* launch = finished_launches.exchange(nullptr, std::memory_order_acquire);
    while (launch != nullptr) {
      HostLaunch* next = launch->next_finished_;
      delete launch;
      launch = next;
    }
  }

  static axon_status run_kernel(void* user_data, char* message) {
    auto* launch = static_cast<HostLaunch*>(user_data);
    if (!runs_kernels) install_worker_warning_handler();
    runs_kernels = true;
    try {
      at::AutoDispatchBelowADInplaceOrView below_autograd;
      const int64_t waiting = queued_launch_count.load(std::memory_order_relaxed) -
                              started_launch_count.fetch_add(1, std::memory_order_relaxed) - 1;
      const bool alone = launch->threads_ == LaunchThreads::kAlone ||
                         (launch->threads_ == LaunchThreads::kTeamForWork && !team_for_work(waiting));
      if (alone) {
        before_single_thread_kernel();
        const OneHostThreadScope one_thread;
        launch->run();
      } else {
        before_team_kernel();
        launch->run();
        after_team_kernel();
      }
      return AXON_SUCCESS;
    } catch (const c10::Error& error) {
      std::snprintf(message, AXON_TASK_MESSAGE_CAPACITY, "%s: %s", launch->kernel_name_,
                    error.what_without_backtrace());
      return failure_status(error);
    } catch (const std::exception& error) {
      std::snprintf(message, AXON_TASK_MESSAGE_CAPACITY, "%s: %s", launch->kernel_name_, error.what());
    } catch (...) {
      std::snprintf(message, AXON_TASK_MESSAGE_CAPACITY, "%s: unknown exception", launch->kernel_name_);
    }
    return AXON_ERROR_TASK_FAILED;
  }

  static void release_kernel(void* user_data) {
    auto* launch = static_cast<HostLaunch*>(user_data);
    if (!launch->destroyed_by_queuing_thread_) {
      delete launch;
      return;
    }
    launch->next_finished_ = finished_launches.load(std::memory_order_relaxed);
    while (!finished_launches.compare_exchange_weak(launch->next_finished_, launch, std::memory_order_release,
                                                    std::memory_order_relaxed)) {
    }
  }

  // `kernel_name` outlives `launch`.
  static void queue(axon_stream stream, const char* kernel_name, std::unique_ptr<HostLaunch> launch,
                    LaunchThreads threads, LaunchRelease release) {
    launch->kernel_name_ = kernel_name;
    launch->threads_ = threads;
    if (threads == LaunchThreads::kAlone) {
      single_thread_launch_count.fetch_add(1, std::memory_order_relaxed);
    } else if (!runs_kernels) {
      release_program_thread_team();
    }
    launch->destroyed_by_queuing_thread_ = release == LaunchRelease::kByQueuingThread;
    const axon_host_function task{&run_kernel, &release_kernel, launch.release()};
    const ActivityLabelScope named([&] { return std::string("host_kernel<") + kernel_name + ">"; });
    // The driver owns the launch from here on, even if the launch fails.
    AXON_CHECK(axon_stream_launch_host_function(stream, task), kernel_name);
    // Counted once queued: a launch that failed never starts. The worker may
    // start it first; a kernel then sees one waiting too few, not too many.
    queued_launch_count.fetch_add(1, std::memory_order_relaxed);
  }

  static void queue_function(axon_stream stream, const char* kernel_name, std::function<void()> body,
                             LaunchThreads threads, LaunchRelease release) {
    auto launch = std::make_unique<FunctionLaunch>(kernel_name, std::move(body));
    const char* name = launch->name();
    queue(stream, name, std::move(launch), threads, release);
  }
};

void launch_on_stream(axon_stream stream, const char* kernel_name, std::function<void()> body) {
  LaunchQueuing::queue_function(stream, kernel_name, std::move(body), LaunchThreads::kTeam, LaunchRelease::kOnWorker);
}

void launch_on_stream(axon_stream stream, const char* kernel_name, HostAliases& aliases, std::function<void()> body,
                      LaunchRelease release, TeamUse team_use) {
  // Before anything of this call is queued (its staging copies included).
  LaunchQueuing::destroy_finished_launches();
  aliases.stage_in(stream);
  LaunchQueuing::queue_function(stream, kernel_name, std::move(body), launch_threads(aliases.bytes_covered(), team_use),
                                release);
  aliases.stage_out(stream);
}

void launch_on_stream(axon_stream stream, const char* kernel_name, std::size_t bytes_covered,
                      std::unique_ptr<HostLaunch> launch, TeamUse team_use) {
  LaunchQueuing::destroy_finished_launches();
  LaunchQueuing::queue(stream, kernel_name, std::move(launch), launch_threads(bytes_covered, team_use),
                       LaunchRelease::kByQueuingThread);
}

void start_worker_team_once(int device, axon_stream stream) {
  static std::array<std::atomic<bool>, 64> started{};
  if (device < 0 || device >= int(started.size()) || started[device].load(std::memory_order_relaxed) ||
      started[device].exchange(true)) {
    return;
  }
  // Run alone: before_single_thread_kernel starts a worker's team on its first kernel.
  LaunchQueuing::queue_function(
      stream, "starting the worker's OpenMP team", [] {}, LaunchThreads::kAlone, LaunchRelease::kOnWorker);
}

int64_t single_thread_launches() { return single_thread_launch_count.load(std::memory_order_relaxed); }

std::pair<int64_t, int64_t> team_for_work_runs() {
  return {work_kernels_alone.load(std::memory_order_relaxed), work_kernels_on_team.load(std::memory_order_relaxed)};
}

}  // namespace axon
