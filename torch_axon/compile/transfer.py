"""Moving tensors across the XLA boundary without copies.

Inputs: an axon tensor is handed to XLA as a DLPack view of a CPU-typed alias
of its device memory (PyTorch exports PrivateUse1 tensors as kDLExtDev, which
XLA does not accept). XLA views such a buffer in place only when it is dense
row-major and aligned; other inputs are first made contiguous on axon (one
device copy, counted in `copied_inputs`).

Outputs: XLA allocates its results itself; each is adopted as axon device
memory (the driver imports the buffer) without a copy, and is counted in
axon's memory statistics while it lives.
"""

from __future__ import annotations

import torch

from .. import _C

# XLA:CPU's minimum buffer alignment for in-place DLPack views (Eigen's 16
# bytes; the axon allocator hands out 256-byte aligned blocks, so only
# offset views can miss it).
ALIGNMENT = 16

copied_inputs = 0


def to_xla(tensor: torch.Tensor):
    import jax

    global copied_inputs
    if not _is_dense(tensor):
        tensor = tensor.contiguous()
        copied_inputs += 1
    alias = _C._host_alias(tensor)
    if alias.data_ptr() % ALIGNMENT:
        tensor = tensor.clone()
        copied_inputs += 1
        alias = _C._host_alias(tensor)
    return jax.dlpack.from_dlpack(alias)


def from_xla(array, device: torch.device) -> torch.Tensor:
    host = torch.from_dlpack(array)
    return _C._adopt_host_tensor(host, device.index if device.index is not None else torch.axon.current_device())


def _is_dense(tensor: torch.Tensor) -> bool:
    return tensor.is_contiguous() and not tensor.is_conj() and not tensor.is_neg()
