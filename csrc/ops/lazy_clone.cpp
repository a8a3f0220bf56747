// Tensor._lazy_clone on axon: ATen's copy-on-write, with the storage's
// DataPtr first given the form ATen requires.
//
// ATen lazily clones only a storage whose DataPtr has its data pointer as its
// context (it checks that, and asserts it again when the last sharer takes
// the memory back). Axon's DataPtrs carry their allocator block instead,
// which the kernels' launches read without a lookup, so this kernel has the
// allocator switch the storage to the shared form first
// (device_allocator_share_by_address), then calls ATen's own composite.
// Writes give the writer memory of its own before its kernel is queued
// (core/copy_on_write.h).
#include <ATen/ops/_lazy_clone_native.h>
#include <torch/library.h>

#include "core/device_allocator.h"

namespace axon {
namespace {

at::Tensor lazy_clone(const at::Tensor& self) {
  device_allocator_share_by_address(self.storage());
  return at::native::_lazy_clone(self);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("_lazy_clone", TORCH_FN(lazy_clone)); }

}  // namespace axon
