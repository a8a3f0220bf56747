"""Moving tensors across the XLA boundary without copies.

Inputs: an axon tensor is handed to XLA as a DLPack view of a CPU-typed alias
of its device memory (PyTorch exports PrivateUse1 tensors as kDLExtDev, which
XLA does not accept). XLA views such a buffer in place only when it is dense
row-major and aligned; other inputs are first made contiguous on axon (one
device copy, counted in `copied_inputs`).

Outputs: XLA allocates its results itself; each is adopted as axon device
memory (the driver imports the buffer) without a copy, and is counted in
axon's memory statistics while it lives. The one exception is the small table
of run-time check results (lowering/checks.py), which the host reads
(`read_checks`): on a real chip, a copy of a few bytes to the host.
"""

from __future__ import annotations

import torch
from torch.utils.dlpack import from_dlpack, to_dlpack

from .. import _C

# XLA:CPU refuses to view a DLPack buffer in place unless it is 64-byte
# aligned (measured with jaxlib 0.10.2: "not aligned to 64 bytes"). Axon's
# allocator hands out 256-byte aligned blocks, so only offset views miss it.
ALIGNMENT = 64

copied_inputs = 0


def to_xla(tensor: torch.Tensor, xla_device):
    global copied_inputs
    if not _is_dense(tensor):
        tensor = tensor.contiguous()
        copied_inputs += 1
    alias = _C._host_alias(tensor)
    if alias.data_ptr() % ALIGNMENT:
        tensor = tensor.clone()
        copied_inputs += 1
        alias = _C._host_alias(tensor)
    # jaxlib's own entry point (jax.dlpack.from_dlpack adds ~60 us of checks per
    # array); copy=False makes XLA refuse rather than silently copy.
    return _jax().dlpack_managed_tensor_to_buffer(to_dlpack(alias), xla_device, None, False, _DL_CPU)


def from_xla(array, device_index: int) -> torch.Tensor:
    host = from_dlpack(_jax().buffer_to_dlpack_managed_tensor(array, stream=None))
    return _C._adopt_host_tensor(host, device_index)


def overlaps_any(array, others) -> bool:
    """Whether XLA array `array` shares memory with any of `others`."""
    start = array.unsafe_buffer_pointer()
    end = start + array.nbytes
    for other in others:
        other_start = other.unsafe_buffer_pointer()
        if start < other_start + other.nbytes and other_start < end and array.nbytes and other.nbytes:
            return True
    return False


def read_checks(array) -> list[list[int]]:
    """The [checks, 2] int64 check table of one call, as Python ints (never adopted as axon memory)."""
    return from_dlpack(_jax().buffer_to_dlpack_managed_tensor(array, stream=None)).tolist()


_DL_CPU = 1  # DLDeviceType.kDLCPU


def _jax():
    from jax._src.lib import _jax as module

    return module


def _is_dense(tensor: torch.Tensor) -> bool:
    return tensor.is_contiguous() and not tensor.is_conj() and not tensor.is_neg()
