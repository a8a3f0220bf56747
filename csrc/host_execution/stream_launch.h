// Queues host-side kernel bodies on an axon stream.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <utility>

#include "axon/stream.h"
#include "host_execution/device_memory_views.h"

namespace axon {

// A kernel touching fewer bytes than this runs on the worker's thread alone.
// Why: a second thread costs more than it gives on small kernels. Where the
// user's own thread also has an OpenMP team, libgomp manages more threads than
// there are cores and cuts its spin-wait short, so every parallel region of the
// worker wakes its helpers from sleep, tens of microseconds, more than a small
// kernel's whole run (a 1×256 by 256×768 product: 48 µs with two threads, 10 µs
// with one; docs/torch_compile.md). Even with spinning helpers, MKL's
// two-thread matrix-vector products are slower at these sizes: a 256 KiB bound
// made a decode loop four times slower (docs/benchmarks.md, 2026-12-04).
constexpr std::size_t kSingleThreadBelowBytes = std::size_t{1} << 20;

// Kernels launched with TeamUse::kForWork (below) still run alone under this
// many bytes. Why: a decode step's tanh over 1,024 floats ran no parallel
// region either way (ATen's vectorized math splits from 2,048 elements), yet
// counted as a team kernel, which releases parked OpenMP helpers
// (openmp_helper_parking.h) once a step; the costly kernels measured for the
// team covered 64 KiB and more (docs/benchmarks.md, stops 57 and 58).
constexpr std::size_t kTeamAtAnySizeFromBytes = std::size_t{64} << 10;

// What a kernel asks of the worker's OpenMP team, beside the bytes it covers.
enum class TeamUse : char {
  // The team from kSingleThreadBelowBytes of operands, one thread below.
  kBySize,
  // Also below that, from kTeamAtAnySizeFromBytes, for CPU kernels whose work
  // is far above the bytes they cover (OperatorPlan::team_at_any_size,
  // product_wants_team): LaunchThreads::kTeamForWork.
  kForWork,
  // Always: the kernel's values depend on how many threads compute them, so
  // it runs with as many as the CPU's own call would. ATen reduces a tensor
  // to one value in a part per thread from 32K elements and adds the parts,
  // and MKL splits a product's sum over k among its threads: on one thread a
  // dot product of 70,001 floats came out -14.359825, on the CPU's two
  // -14.359283 (a fuzz seed of stop 69). The callers ask for it where that
  // split can happen (kSplitSumsFromElements).
  kForResults,
};

// The elements from which a reduction to one value, or a product's sum over
// k, may be split among threads: ATen's grain for a two-pass reduction is
// 32768; MKL's dot products and matrix products split from 16384 terms on
// the hosts measured (stop 69, docs/benchmarks.md).
constexpr int64_t kSplitSumsFromElements = 16384;

// Runs `body` on `stream` after the work already queued there. Exceptions it
// throws become the stream's pending error (reported by the next
// synchronize), or are raised here at once under AXON_LAUNCH_BLOCKING=1.
// `kernel_name` names the kernel in that error. The body runs with autograd
// and ADInplaceOrView dispatch disabled, as kernels do. The body and what it
// captured are destroyed on the worker once it has run.
void launch_on_stream(axon_stream stream, const char* kernel_name, std::function<void()> body);

// Who destroys a launch (its body and captures) once the worker has run it.
enum class LaunchRelease {
  kOnWorker,
  // The next launch queued from any thread destroys it. Only for bodies that
  // capture nothing but host aliases of axon tensors and values made for the
  // call (no caller's CPU tensor, whose storage may hold a Python object and
  // must not outlive a synchronize). Why: stream_launch.cpp. A body that
  // consumes a capture (callBoxed pops its stack) should consume a copy, so
  // that the objects die with the launch, on the queuing thread.
  kByQueuingThread,
};

// The same for a kernel over `aliases` (device_memory_views.h): where they
// view staging buffers, the bytes are staged in before `body` and the
// written bytes staged out after it, on the same stream. `team_use`: as for
// the launch below.
void launch_on_stream(axon_stream stream, const char* kernel_name, HostAliases& aliases, std::function<void()> body,
                      LaunchRelease release = LaunchRelease::kOnWorker, TeamUse team_use = TeamUse::kBySize);

// Which threads a host kernel runs with (decided when it is queued, except
// kTeamForWork's choice, made as it starts).
enum class LaunchThreads : char {
  kAlone,  // the worker's thread only: under kSingleThreadBelowBytes
  // The team for the work's sake (TeamUse::kForWork) under
  // kSingleThreadBelowBytes, but only while a program thread is blocked
  // waiting for a device (core/host_waits.h); and while the worker's OpenMP
  // helpers are parked (openmp_helper_parking.h), only when
  // kKernelsWaitingToReleaseHelpers kernels wait behind it too.
  kTeamForWork,
  kTeam,
};

// Why the program's thread decides: on 2 cores the worker, its helper and
// the program's thread queuing the next kernels are three threads that want
// a core. The worker then spins at libgomp's barriers for a helper the
// scheduler has not run, and a helper that spins between regions takes the
// core the program's thread needs: a small MLP's training step (products of
// 29 rows, 0.5-2M multiply-adds, on the team) took 0.54-0.70 ms against
// 0.28-0.30 with those products alone and the CPU's 0.48 (docs/benchmarks.md,
// stop 59). While the program's thread waits, its core is free, and those
// products run faster on the team (stop 55). Kernels of 1 MiB and more keep
// the team always (the same rule for them changed nothing measured, stop 59).
//
// Why parked helpers stay parked: they are parked because the worker has
// been running kernels alone for a while, the program's thread feeding it (a
// generation's decode steps, which wait for each token). Waking them at each
// token's wait costs more than its few kernels gain (8-11 ms for an 8-row
// product that takes 30 us, when the helper found no core; docs/benchmarks.md,
// stop 58). A queue building up behind the worker says it has fallen behind.
constexpr int64_t kKernelsWaitingToReleaseHelpers = 8;

// A kernel queued on a stream together with what it needs, built by the
// caller as a subclass so that its body and captures live inline: queuing
// one is a single allocation (a std::function body is a second one, and
// moving a capture into it copies the capture again).
class HostLaunch {
 public:
  HostLaunch() = default;
  HostLaunch(const HostLaunch&) = delete;
  HostLaunch& operator=(const HostLaunch&) = delete;
  virtual ~HostLaunch() = default;
  // On the worker, with autograd and ADInplaceOrView dispatch disabled.
  virtual void run() = 0;

 private:
  friend struct LaunchQueuing;
  const char* kernel_name_ = nullptr;  // a name that outlives the launch
  LaunchThreads threads_ = LaunchThreads::kTeam;
  bool destroyed_by_queuing_thread_ = false;
  HostLaunch* next_finished_ = nullptr;  // in the list of finished launches
};

// Queues `launch` on `stream`, for a kernel that makes its host aliases
// itself on the worker (DeferredAliases::make), visiting `bytes_covered` bytes
// of device memory (DeferredAliases::bytes_visited). `kernel_name` must outlive
// the launch (a literal, or an operator plan's name: plans live as long as
// the process); it is not copied. The launch is destroyed as
// kByQueuingThread says, so it keeps that rule: it holds nothing but the
// aliases' description and values made for the call, and its run() consumes
// copies.
//
// `team_use`: whether the kernel asks for the worker's OpenMP team below
// kSingleThreadBelowBytes too (TeamUse).
void launch_on_stream(axon_stream stream, const char* kernel_name, std::size_t bytes_covered,
                      std::unique_ptr<HostLaunch> launch, TeamUse team_use = TeamUse::kBySize);

// Queues on `stream`, the first time it is called for `device`, a launch
// that starts the device worker's OpenMP team and parks it at once
// (openmp_helper_parking.h). Why: starting a team makes the worker wait, at
// libgomp's dock, for its new threads to run; with the Python thread busy on
// 2 cores that took 10-12 ms, which a first kernel paid. Called where a
// program first moves data onto a device (a host-to-axon copy), the start
// runs while the worker has nothing else to do.
void start_worker_team_once(int device, axon_stream stream);

// How many launches so far ran on one thread (kSingleThreadBelowBytes); for tests.
int64_t single_thread_launches();

// How many kTeamForWork launches so far ran alone, and how many with the team; for tests.
std::pair<int64_t, int64_t> team_for_work_runs();

}  // namespace axon
