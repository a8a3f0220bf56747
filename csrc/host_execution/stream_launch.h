// Queues host-side kernel bodies on an axon stream.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

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
// written bytes staged out after it, on the same stream. `team_at_any_size`:
// as for the launch below.
void launch_on_stream(axon_stream stream, const char* kernel_name, HostAliases& aliases, std::function<void()> body,
                      LaunchRelease release = LaunchRelease::kOnWorker, bool team_at_any_size = false);

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
  bool serial_ = false;                // run with one thread (see kSingleThreadBelowBytes)
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
// `team_at_any_size`: the kernel runs with the worker's OpenMP team even
// below kSingleThreadBelowBytes, for CPU kernels whose work is far above the
// bytes they cover (OperatorPlan::team_at_any_size).
void launch_on_stream(axon_stream stream, const char* kernel_name, std::size_t bytes_covered,
                      std::unique_ptr<HostLaunch> launch, bool team_at_any_size = false);

// How many launches so far ran on one thread (kSingleThreadBelowBytes); for tests.
int64_t single_thread_launches();

}  // namespace axon
