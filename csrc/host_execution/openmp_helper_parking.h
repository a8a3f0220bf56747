// Parks the worker's OpenMP helpers while the worker runs kernels alone.
#pragma once

#include <cstdint>

namespace axon {

// All but helper_parkings are called on a device's worker only, around the
// host kernels it runs (stream_launch.cpp); each worker keeps its own state.
// A worker's first kernel, if it runs alone, starts the team parked
// (start_worker_team_once in stream_launch.h queues such a kernel).
//
// Why: after a parallel region, libgomp's helpers spin for their whole budget
// (several milliseconds; libgomp reads it once, when `import torch` loads it)
// waiting for the next region. Eager training steps gain from that spin: their
// parallel kernels come back to back, and a helper woken from sleep instead
// costs tens of microseconds a region on a busy host (small models' steps took
// 20-40% longer with the spin cut; docs/benchmarks.md, stop 58). But when the
// worker goes on with single-thread kernels, as in a generation's decode steps
// after its prompt, the spinning helper takes a core from the worker and from
// the Python thread that feeds it: on 2 cores Hugging Face `generate` took
// 1.6x longer per token on its first call than with the spin cut.
//
// So the worker watches one helper's CPU clock. When a single-thread kernel
// starts at least kHelperSpinCheckMicroseconds after the last sample and the
// helper burnt at least a quarter of that interval, or the scheduler has it
// runnable (a loaded host may keep a spinning helper waiting for a core for
// milliseconds), the worker opens a parallel region of its team's size and,
// without running the region's body itself, goes on with its kernels inside
// it (a single-thread kernel runs as it would outside: ATen and MKL run
// serially inside a region). The helpers run the body, which sleeps on a
// futex until released: they take no CPU. The next kernel that may run
// parallel regions first releases them and closes the region (one wake of
// the helpers, waited for on a futex, not at libgomp's spinning barrier),
// then runs with its whole team.
constexpr int64_t kHelperSpinCheckMicroseconds = 1000;

// Before a kernel that runs on the worker's thread alone.
void before_single_thread_kernel();

// Before a kernel that may run parallel regions: releases parked helpers.
void before_team_kernel();

// After a kernel that may have run parallel regions.
void after_team_kernel();

// Whether this worker's helpers are parked now.
bool helpers_parked();

// How many times this process parked a worker's helpers (for tests).
int64_t helper_parkings();

}  // namespace axon
