// Kernels for axon tensors in the CPU's other layouts: sparse COO, sparse
// compressed (CSR, CSC, BSR, BSC) and strided nested tensors.
//
// Such a tensor is metadata over dense axon tensors: a sparse tensor's
// indices and values, a compressed tensor's compressed and plain indices and
// values, a nested tensor's buffer (its sizes, strides and offsets are CPU
// metadata on every device). Two kernels run every operator the CPU has for
// these layouts (layout_operators.h):
//  - run_device_generic_kernel: operators whose PyTorch implementation is
//    device-generic (it only builds, reads or rearranges the metadata, or
//    computes through dense operators on the members: construction from
//    members, _values, _nnz, a nested transpose, nested elementwise and
//    softmax) run it, the one registered for the CPU, on the axon tensors
//    themselves: members stay where they are and every dense operator it
//    calls runs as an axon kernel, queued on the stream.
//  - run_layout_host_kernel: everything else (coalescing, sparse products,
//    conversions between layouts, nested softmax) runs ATen's CPU kernel on
//    the stream's host seam, as dense operators whose result size depends on
//    data do: the current stream is drained, the kernel sees each axon
//    tensor as a CPU tensor of the same layout whose members alias device
//    memory (HostAliases: staged copies where the host cannot address it),
//    and its results come back to the device. A result that views an
//    argument's memory (a nested tensor's component, a sparse tensor's
//    values) views the same device memory; a sparse or dense argument the
//    kernel mutates is worked on as a host copy and written back (members,
//    sizes and the coalesced flag, or bytes and shape).
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/DeviceGuard.h>

#include <optional>

namespace axon {

// The axon device of a call: its first axon tensor's, else its device
// argument's if that names an index.
std::optional<c10::Device> axon_device_of(c10::ArrayRef<c10::IValue> args);

// `Key` is the CPU dispatch key of the layout family (SparseCPU,
// SparseCsrCPU or NestedTensorCPU) whose implementation runs, with the
// call's device current (the placeholders it makes go there).
template <c10::DispatchKey Key>
void run_device_generic_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const c10::OptionalDeviceGuard device_guard(axon_device_of(torch::jit::last(*stack, op.schema().arguments().size())));
  op.redispatchBoxed(c10::DispatchKeySet(Key), stack);
}

void run_layout_host_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack);

}  // namespace axon
