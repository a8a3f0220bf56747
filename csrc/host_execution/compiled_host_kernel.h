// Host kernels compiled at run time, launched on axon streams.
//
// Default torch.compile on axon generates C++ kernels with Inductor's CPU code
// generator (torch_axon/inductor/). Each generated kernel also gets a C entry
// point taking one 64-bit slot per argument, so that a launch is a driver host
// function over slots rather than a Python call: the kernel runs on the
// stream, in order with eager work, and the caller returns at once. Tensor
// arguments reach it through HostAliases (device_memory_views.h), so the
// same launch works where device memory is staged.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace axon {

// The entry point: slot i holds argument i as the kernel's C signature takes
// it (a pointer, an int64_t, or a float's bits in the low 32 bits).
using HostKernelEntry = void (*)(const std::uint64_t* slots);

// How the kernel takes one argument.
enum class HostKernelArgument : char {
  read_pointer = 'r',     // `const T*`: a tensor the kernel only reads
  written_pointer = 'w',  // `T*`: a tensor the kernel may read and write
  integer = 'i',          // int64_t
  real = 'f',             // float
};

using HostKernelValue = std::variant<at::Tensor, std::int64_t, double>;

// Queues `entry` over `values` on the current stream of the tensors' axon
// device and returns. `kinds` has one HostKernelArgument code per value.
// Tensors must be on one axon device, or on the CPU: a CPU tensor read is
// snapshotted at the call (the caller may change it afterwards), and a
// CPU tensor written makes the call wait for the kernel, since the caller
// reads it without any stream in between. Errors in the arguments raise
// here; the kernel's own cannot be caught (it is compiled C++, as on the CPU).
void launch_host_kernel(HostKernelEntry entry, const std::string& kernel_name, const std::string& kinds,
                        const std::vector<HostKernelValue>& values);

}  // namespace axon
