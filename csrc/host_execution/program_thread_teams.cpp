#include "host_execution/program_thread_teams.h"

#include <algorithm>
#include <atomic>
#include <chrono>

// OpenMP 5.0's pause, by its C name (omp.h is not among PyTorch's headers;
// libgomp is loaded with libtorch_cpu). 1 is omp_pause_soft: the runtime
// frees the calling thread's team and starts it again when needed. Weak: a
// PyTorch built without OpenMP lacks it.
extern "C" int omp_pause_resource_all(int kind) __attribute__((weak));

namespace axon {
namespace {

constexpr int kPauseSoft = 1;

// A release that took this long ended a team (its helpers woke and were
// joined, tens of microseconds); without one it returns within a microsecond.
constexpr auto kTeamEndedAfter = std::chrono::microseconds(10);

std::atomic<int64_t> releases{0};
std::atomic<bool> enabled{true};

// This thread's next allowed release, and the wait after its next release
// that ends a team.
thread_local std::chrono::steady_clock::time_point next_release{};
thread_local std::chrono::microseconds interval{kFirstReleaseIntervalMicroseconds};
// Whether this thread's last release found no team.
thread_local bool found_none{false};

}  // namespace

void release_program_thread_team() {
  if (omp_pause_resource_all == nullptr || !enabled.load(std::memory_order_relaxed)) return;
  const auto start = std::chrono::steady_clock::now();
  if (start < next_release) return;
  // Refused (nonzero) inside a parallel region.
  omp_pause_resource_all(kPauseSoft);
  const auto end = std::chrono::steady_clock::now();
  if (end - start >= kTeamEndedAfter) {
    next_release = end + interval;
    interval = std::min(interval * 2, std::chrono::microseconds(kLongestReleaseIntervalMicroseconds));
    found_none = false;
  } else {
    // Two releases in a row that find none start the interval over. Why not
    // one: where the host holds the thread up for longer than the interval
    // between two kernels of one step, the second kernel's release comes
    // after the first one's and finds nothing; starting over then undid the
    // doubling (11 releases in a run of 100 steps beside busy processes,
    // where 6-9 are usual).
    if (found_none) interval = std::chrono::microseconds(kFirstReleaseIntervalMicroseconds);
    found_none = true;
    next_release = end + interval;
  }
  releases.fetch_add(1, std::memory_order_relaxed);
}

int64_t program_thread_team_releases() { return releases.load(std::memory_order_relaxed); }

void set_program_thread_team_releases_enabled(bool on) { enabled.store(on, std::memory_order_relaxed); }

}  // namespace axon
