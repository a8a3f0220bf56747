"""Driver-level switches: launch blocking and shutdown."""

import atexit

from .. import _C


def is_launch_blocking() -> bool:
    """True when AXON_LAUNCH_BLOCKING=1 made every launch synchronous."""
    if _C._device_count() == 0:
        return False
    return bool(_C._device_properties(0)["launch_blocking"])


def shutdown() -> None:
    """Drains every stream and stops the device runtime.

    Afterwards every axon operation raises an error naming the shutdown;
    tensors still alive can be dropped safely. It cannot be undone in this
    process.
    """
    _C._shutdown()


def _drain_autograd_device_threads() -> None:
    """At interpreter exit, lets autograd's axon worker threads finish what they hold.

    Backward on axon runs on autograd's per-device threads. When a backward
    fails, the caller gets the error at once while the device thread is
    still releasing the failed graph, which can need the GIL; if the
    interpreter is finalizing by then, CPython ends the thread by unwinding
    it through C++ frames that cannot be unwound, and the process aborts
    ("terminate called without an active exception"). A tiny backward per
    used device, queued behind that cleanup, returns only once each thread
    is past it; a short sleep then lets the threads drop their references to
    the probes too (that release also needs the GIL, which sleeping frees).
    """
    import time

    import torch

    if _C._is_shut_down() or _C._device_count() == 0:
        return
    used = False
    try:
        for index in range(_C._device_count()):
            if torch.axon.memory_stats(index).get("allocation.all.peak", 0) == 0:
                continue  # never used: no autograd thread has work for it
            for _ in range(2):  # the second passes behind anything the first overtook
                probe = torch.zeros(1, device=f"axon:{index}", requires_grad=True)
                (probe * 1).sum().backward()
            used = True
        if used:
            time.sleep(0.02)
    except Exception:  # noqa: BLE001  exiting: nothing is left to report to
        pass


atexit.register(_drain_autograd_device_threads)
