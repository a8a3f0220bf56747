"""Driver-level switches: launch blocking and shutdown."""

from . import _C


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
