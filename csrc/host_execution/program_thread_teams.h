// Lets go of the OpenMP team of a program thread that queues device work.
#pragma once

#include <cstdint>

namespace axon {

// Called on a program thread (never a device's worker) as it queues a host
// kernel that may run parallel regions. If the thread has an OpenMP team of
// its own (it ran a parallel CPU operator: a large tensor made or normalized
// on the CPU before `.to("axon")`), the team's helper threads end; its next
// parallel CPU operator starts them again (about 0.1 ms).
//
// Why: libgomp counts the helper threads of every team in the process. Once
// it manages more threads than there are cores, every thread's spin-wait is
// cut to 100 iterations, so the worker's helpers sleep between the worker's
// parallel kernels and each kernel wakes them: a 4 MiB ReLU took 84-107 us
// on 2 cores instead of 47-52, and training steps took 11-24% longer (MLP
// 4.69 -> 5.27 ms, CNN 7.52 -> 9.29, GPT 68.4 -> 81.5) after one parallel
// CPU operator on the program's thread (docs/benchmarks.md, stop 60). The
// program thread's team then stays idle for the rest of the run, asleep, yet
// keeps libgomp counting its helper. omp_pause_resource_all (OpenMP 5.0)
// ends the calling thread's team and takes its helpers out of the count.
//
// A thread lets go at most once per interval, which starts at
// kFirstReleaseIntervalMicroseconds and doubles each time the thread had a
// team again, up to kLongestReleaseIntervalMicroseconds (two releases in a
// row that find none start it over). Why: a program that prepares each batch with
// parallel CPU operators starts its team again every step, and ending it
// each time cost more than the throttled spin (a small MLP's step with
// AdamW 5.30 -> 6.08 ms); the team it made once, at setup, goes at once.
constexpr int64_t kFirstReleaseIntervalMicroseconds = 5'000;
constexpr int64_t kLongestReleaseIntervalMicroseconds = 1'000'000;

void release_program_thread_team();

// How many times program threads asked OpenMP to end their teams, and a
// switch to turn the release off (for tests and the A/B in bench/).
int64_t program_thread_team_releases();
void set_program_thread_team_releases_enabled(bool enabled);

}  // namespace axon
