// Limits the CPU kernels a thread runs to that thread alone, for a scope.
#pragma once

namespace axon {

// While alive, ATen's parallel regions and MKL on the constructing thread use
// that thread only (OpenMP's per-thread team size is 1, and MKL's own
// thread-local count, which outranks the team size once a program has called
// torch.set_num_threads); the destructor restores both.
//
// Why it exists: libgomp spins only briefly at its barriers, then sleeps on a
// futex, once it manages more threads than the process has cores. Every
// thread that runs a parallel region keeps its own pool of helper threads for
// the rest of its life, so a second thread running parallel CPU kernels
// besides the device's worker (the Python thread, working out a new shape's
// output layout on stand-ins, ops/shape_inference.cpp) puts libgomp over the
// core count for good, and from then on each of the worker's parallel kernels
// wakes its helpers from sleep: on 2 cores a GPT training step took 8–15%
// longer (docs/benchmarks.md). Small kernels on the worker run in this scope
// too, where waking a helper costs more than the kernel (stream_launch.cpp).
class OneHostThreadScope {
 public:
  OneHostThreadScope();
  ~OneHostThreadScope();
  OneHostThreadScope(const OneHostThreadScope&) = delete;
  OneHostThreadScope& operator=(const OneHostThreadScope&) = delete;

 private:
  int saved_threads_;
  int saved_mkl_threads_ = 0;
};

}  // namespace axon
