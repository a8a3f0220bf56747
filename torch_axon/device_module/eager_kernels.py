"""Which provider runs eager operators: host kernels, or kernels compiled for the device.

- ``"host"``: every operator runs as a host kernel (the CPU's ATen kernel over device memory, or over staging
  copies where device memory is not host-addressable).
- ``"compiled"``: an operator the compile path can lower runs as a StableHLO executable the driver compiled for
  the call's exact shapes (csrc/compiled_execution/), cached in memory and on disk; the rest stay host kernels.
- ``"auto"`` (default): ``"compiled"`` on drivers whose memory the host cannot address, else ``"host"``.

``AXON_EAGER_KERNELS`` sets the mode at start-up; ``set_eager_kernels`` changes it for later calls.
"""

from __future__ import annotations

from .. import _C


def eager_kernels() -> str:
    return _C._eager_kernels()


def set_eager_kernels(mode: str) -> None:
    _C._set_eager_kernels(mode)


def compiled_kernel_stats() -> dict[str, int]:
    """Counters since start or reset: launches, call shapes lowered and declined, calls not eligible (strided
    tensors, generators, out=), new shapes refused by the cache limit and by the per-shape value limit."""
    return dict(_C._compiled_kernel_stats())


def reset_compiled_kernel_stats() -> None:
    _C._reset_compiled_kernel_stats()
