// torch_axon._C's bindings, one init_<area> per area (each in <area>.cpp here).
// module.cpp calls them in order; every binding is private (leading
// underscore) because torch_axon wraps them in the public, torch.cuda-shaped API.
#pragma once

#include <pybind11/pybind11.h>

namespace axon {

// C++ exceptions → the Python types PyTorch documents (IndexError, ValueError,
// TypeError, NotImplementedError, torch.OutOfMemoryError, DistBackendError).
void init_exception_translation(pybind11::module_& m);

// Devices, the driver's name and capabilities, synchronize and shutdown.
void init_device(pybind11::module_& m);

// Stream priority, event timing and _sleep (what torch.Stream/Event lack).
void init_streams(pybind11::module_& m);

// Default generators and their state (seed, offset).
void init_random(pybind11::module_& m);

// The CPU-fallback warning hook and its per-operator counts.
void init_fallback(pybind11::module_& m);

// _C.Executable: driver executables launched with tensors as bindings.
void init_executables(pybind11::module_& m);

// Compiled eager kernels: the lowerer torch_axon registers, the mode, the counters.
void init_compiled_kernels(pybind11::module_& m);

// Adopting foreign host buffers and CPU views of device memory (host drivers only).
void init_adopted_host_buffers(pybind11::module_& m);

// _record_memory_history and _memory_snapshot: the allocator's history for memory snapshots.
void init_memory_history(pybind11::module_& m);

// _launch_host_kernel: Inductor's C++ kernels for axon, launched on streams.
void init_host_kernels(pybind11::module_& m);

// _convolution_result_format: the layouts axon's kernels give, for fake tensors.
void init_result_layouts(pybind11::module_& m);

// _C._distributed: the ProcessGroupAxon class for torch.distributed.
void init_distributed(pybind11::module_& m);

// _C._testing: hooks only tests use (stream gates, allocator totals).
void init_testing(pybind11::module_& m);

}  // namespace axon
