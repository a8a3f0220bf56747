// The CPU tensors a host kernel sees for axon tensors of any layout, and the
// way back.
//
// A sparse, compressed or nested axon tensor becomes a CPU tensor of the same
// layout whose members (indices, values, buffer) are aliases of device
// memory (HostAliases: staged copies where the host cannot address it).
// Results the kernel returns come back as views of the device memory they
// view, or as fresh device tensors; arguments it was allowed to mutate are
// given what their host copies ended with.
#pragma once

#include <ATen/ATen.h>

#include <utility>
#include <vector>

#include "host_execution/device_memory_views.h"

namespace axon {

bool is_compressed(c10::Layout layout);

// One call's translation between axon tensors and the CPU tensors its
// kernel sees.
class HostLayoutTensors {
 public:
  explicit HostLayoutTensors(c10::Device device) : device_(device) {}

  HostAliases& aliases() { return aliases_; }

  // The CPU tensor, in the same layout, the kernel sees for `tensor`.
  // `mutated`: the kernel may write it, so it gets a host copy (a sparse
  // kernel may replace or grow its members, which aliases cannot follow).
  // A tensor passed twice is one host tensor.
  at::Tensor to_host(const at::Tensor& tensor, bool mutated);

  // The axon tensor for a CPU tensor the kernel returned or left in an
  // argument: the argument it came from, a view of the device memory it
  // views, or a copy on the device.
  at::Tensor to_device(const at::Tensor& host);

  // A result left on the host (a copy to the CPU), cloned where it views
  // device memory.
  at::Tensor detached_from_device(const at::Tensor& host);

  // Gives `target`, an axon argument the kernel was allowed to mutate, what
  // its host copy `host` ended with.
  void write_back(const at::Tensor& target, const at::Tensor& host);

 private:
  at::Tensor member_to_host(const at::Tensor& member, bool mutated);
  at::Tensor member_to_device(const at::Tensor& host);
  at::Tensor member_written_back(const at::Tensor& host);

  c10::Device device_;
  HostAliases aliases_;
  std::vector<at::Tensor> buffers_;  // nested arguments' storages as tensors
  // (host copy, the device member it was copied from) for mutated arguments' members.
  std::vector<std::pair<at::Tensor, at::Tensor>> member_copies_;
  // (CPU tensor handed to the kernel, the axon argument it stands for).
  std::vector<std::pair<at::Tensor, at::Tensor>> converted_;
};

}  // namespace axon
