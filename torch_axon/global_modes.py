"""Process-wide modes that kernels read while they run, kept in launch order.

On the emulated driver an operator's host kernel reads some of PyTorch's process-wide settings when the device's
worker runs it, not when Python launches it: `torch.use_deterministic_algorithms` makes the CPU's index_copy_,
scatter and index_put_ kernels write duplicate indices in order, and `torch.utils.deterministic.
fill_uninitialized_memory` fills new tensors. Those settings are not per thread, so the worker cannot keep a
value of its own. Instead each change waits for the work already queued on every axon device, which then runs
under the setting it was launched under, as on CUDA, where the kernel is chosen at launch:

    with DeterministicGuard(True):
        y = torch.index_copy(x, 0, index, source)   # queued
    # leaving the guard first waits for y, computed in index order

The change itself is PyTorch's; waiting costs nothing when no work is queued, and setting the value already in
place does not wait.
"""

from __future__ import annotations

import functools

import torch

from . import _C

# torch._C's setters, which torch.use_deterministic_algorithms, torch.set_deterministic_debug_mode and
# torch.utils.deterministic call at run time through the module, each with its getter. Setting the value already
# in place waits for nothing: Dynamo restores the setting after compiling every frame.
_SETTERS = {"_set_deterministic_algorithms": "_get_deterministic_algorithms",
            "_set_deterministic_fill_uninitialized_memory": "_get_deterministic_fill_uninitialized_memory"}


def _wait_for_queued_work() -> None:
    from .device_module import _is_in_bad_fork

    if _is_in_bad_fork() or _C._is_shut_down():
        return
    for index in range(_C._device_count()):
        _C._synchronize(index)


def _waiting_first(setter, getter):
    @functools.wraps(setter)
    def set_mode(mode, *args, **kwargs):
        if bool(mode) != getter():
            _wait_for_queued_work()
        return setter(mode, *args, **kwargs)

    set_mode._axon_original = setter
    return set_mode


def install_launch_ordered_modes() -> None:
    for name, getter in _SETTERS.items():
        setter = getattr(torch._C, name)
        if not hasattr(setter, "_axon_original"):
            setattr(torch._C, name, _waiting_first(setter, getattr(torch._C, getter)))
