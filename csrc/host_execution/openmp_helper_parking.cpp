#include "host_execution/openmp_helper_parking.h"

#include <ATen/Parallel.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>

// From libgomp, which libtorch_cpu loads (omp.h is not among PyTorch's headers).
// GOMP_parallel_start and GOMP_parallel_end are libgomp's original ABI for a
// parallel construct, kept exported: the first starts a team that runs `body`
// on every thread but the caller, and returns; the caller is then thread 0
// of the region until it calls the second, which waits for the others.
extern "C" int omp_get_thread_num(void);
extern "C" int omp_get_num_threads(void);
extern "C" void GOMP_parallel_start(void (*body)(void*), void* data, unsigned threads);
extern "C" void GOMP_parallel_end(void);

namespace axon {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<int64_t> parkings{0};

// What parked helpers wait on: 0 until the worker releases them.
struct Parking {
  std::atomic<int> released{0};
  std::atomic<int> left{0};  // helpers that have returned from park_helper
};

void park_helper(void* data) {
  auto& parking = *static_cast<Parking*>(data);
  // std::atomic::wait sleeps on a futex after a short spin.
  while (parking.released.load(std::memory_order_acquire) == 0) parking.released.wait(0, std::memory_order_acquire);
  parking.left.fetch_add(1, std::memory_order_release);
  parking.left.notify_one();
}

class WorkerHelpers {
 public:
  ~WorkerHelpers() {
    release();  // the worker thread is ending: close the region first
    close_status_file();
  }

  void before_single_thread_kernel() {
    if (!started_) start_parked();
    if (!watching_ || parked_) return;
    const auto now = Clock::now();
    const int64_t interval_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now - sampled_at_).count();
    if (interval_ns < kHelperSpinCheckMicroseconds * 1000) return;
    const int64_t cpu = helper_cpu_ns();
    if (cpu < 0) {
      team_ = 0;  // the pool changed: learn the clock again after the next team kernel
      watching_ = false;
      return;
    }
    const int64_t burnt = cpu - sampled_cpu_ns_;
    sampled_at_ = now;
    sampled_cpu_ns_ = cpu;
    // A spinning helper burns what the cores let it (two thirds of a core with
    // the worker and the Python thread on two) and is runnable throughout; a
    // sleeping one burns nothing and is not. On a loaded host a spinning
    // helper may wait for a core through whole milliseconds, burning nothing:
    // its state tells then. A helper parked just after its spin ran out costs
    // one more wake.
    if (burnt * 4 >= interval_ns || helper_runnable()) park();
  }

  bool parked() const { return parked_; }

  void before_team_kernel() {
    started_ = true;
    release();
  }

  void after_team_kernel() {
    const int team = at::get_num_threads();
    if (team < 2) return;
    if (team != team_ && !learn_helper_clock(team)) return;
    const int64_t cpu = helper_cpu_ns();
    if (cpu < 0) {
      team_ = 0;
      return;
    }
    sampled_at_ = Clock::now();
    sampled_cpu_ns_ = cpu;
    watching_ = true;
  }

 private:
  // The worker's first kernel, alone: its team starts now, while this
  // kernel is all there is, rather than at its first parallel kernel.
  void start_parked() {
    started_ = true;
    const int team = at::get_num_threads();
    if (team < 2 || !learn_helper_clock(team)) return;
    park();
  }

  void park() {
    parking_.released.store(0, std::memory_order_relaxed);
    parking_.left.store(0, std::memory_order_relaxed);
    GOMP_parallel_start(&park_helper, &parking_, unsigned(team_));
    // The team libgomp gave, which may be smaller than asked for.
    parked_helpers_ = omp_get_num_threads() - 1;
    parked_ = true;
    watching_ = false;
    parkings.fetch_add(1, std::memory_order_relaxed);
  }

  void release() {
    if (!parked_) return;
    parking_.released.store(1, std::memory_order_release);
    parking_.released.notify_all();
    // Asleep until the helpers have woken and left: at GOMP_parallel_end's
    // barrier the worker would spin instead, on a core a woken helper may need
    // (11 ms stalls measured on 2 cores with the Python thread busy).
    for (int left = parking_.left.load(std::memory_order_acquire); left < parked_helpers_;
         left = parking_.left.load(std::memory_order_acquire)) {
      parking_.left.wait(left, std::memory_order_acquire);
    }
    GOMP_parallel_end();
    parked_ = false;
  }

  // One region of the team's size in which helper 1 hands over its CPU clock
  // and thread id. libgomp keeps the same pool threads for every region of
  // the same size.
  bool learn_helper_clock(int team) {
    std::atomic<bool> learned{false};
    clockid_t clock{};
    pid_t thread_id = 0;
#pragma omp parallel num_threads(team)
    {
      if (omp_get_thread_num() == 1 && pthread_getcpuclockid(pthread_self(), &clock) == 0) {
        thread_id = pid_t(syscall(SYS_gettid));
        learned.store(true, std::memory_order_release);
      }
    }
    if (!learned.load(std::memory_order_acquire)) return false;
    clock_ = clock;
    team_ = team;
    close_status_file();
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/task/%d/stat", int(thread_id));
    status_file_ = open(path, O_RDONLY | O_CLOEXEC);  // -1 without /proc: the CPU clock alone tells
    return true;
  }

  void close_status_file() {
    if (status_file_ >= 0) close(status_file_);
    status_file_ = -1;
  }

  // The helper's CPU time; -1 if its clock cannot be read (it has exited).
  int64_t helper_cpu_ns() const {
    timespec time;
    if (clock_gettime(clock_, &time) != 0) return -1;
    return int64_t(time.tv_sec) * 1000000000 + time.tv_nsec;
  }

  // Whether the scheduler has the helper running or waiting for a core (the
  // state letter after the command name in /proc's stat: R); false where
  // that cannot be read.
  bool helper_runnable() const {
    if (status_file_ < 0) return false;
    char text[512];
    const ssize_t length = pread(status_file_, text, sizeof text - 1, 0);
    if (length <= 0) return false;
    text[length] = '\0';
    const char* name_end = std::strrchr(text, ')');  // the name may hold spaces and parentheses
    return name_end != nullptr && name_end[1] == ' ' && name_end[2] == 'R';
  }

  int team_ = 0;  // the team size clock_ was learned for (0: none)
  clockid_t clock_{};
  int status_file_ = -1;   // the helper's /proc stat, open while team_ is set
  bool watching_ = false;  // a team kernel ran and its helper may still spin
  Clock::time_point sampled_at_;
  int64_t sampled_cpu_ns_ = 0;
  bool parked_ = false;
  int parked_helpers_ = 0;  // the helpers running park_helper while parked_
  bool started_ = false;    // a kernel has run on this worker
  Parking parking_;
};

thread_local WorkerHelpers worker_helpers;

}  // namespace

void before_single_thread_kernel() { worker_helpers.before_single_thread_kernel(); }

void before_team_kernel() { worker_helpers.before_team_kernel(); }

void after_team_kernel() { worker_helpers.after_team_kernel(); }

bool helpers_parked() { return worker_helpers.parked(); }

int64_t helper_parkings() { return parkings.load(std::memory_order_relaxed); }

}  // namespace axon
