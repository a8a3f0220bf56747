// Frees the host's cores for XLA:CPU's threads while compiled executables run.
#pragma once

namespace axon {

// Called before a driver executable is loaded. The first call for a compiled
// program (any format but a host shared object, whose code runs on the
// worker with the worker's own team) parks one more OpenMP team for the rest
// of the process; later calls do nothing. Under the emulated driver and the
// PJRT driver's CPU plugin, such programs run on XLA:CPU's thread pool.
//
// Why: after each parallel kernel of the device's worker, its OpenMP helper
// spins for libgomp's full budget (several milliseconds) waiting for the
// next one, because the worker is the only thread that runs parallel kernels
// (one_host_thread.h). Eager kernels gain from that spin. An XLA executable
// that follows computes on XLA's own thread pool instead, which then shares
// the cores with the spinning helper. libgomp reads its wait policy once,
// when `import torch` loads it, so the spin cannot be set afterwards; but it
// spins only briefly once it manages more threads than there are cores, and
// a parked team (a thread that ran one parallel region and waits for ever,
// its helper asleep) puts it there. On 2 cores, a compiled training step
// with AdamW took 23-28% less time for the MLP and the GPT of
// bench/compile.py (docs/benchmarks.md). Eager kernels in such a process
// pay for it, each parallel kernel waking its helper from sleep (5-15% on
// small eager training steps), so it happens only in processes that load a
// compiled executable.
void free_cores_for_compiled_code(const char* executable_format);

// Whether this process has parked its team (for tests).
bool cores_freed_for_compiled_code();

}  // namespace axon
