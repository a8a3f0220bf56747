"""Operators that ran on the CPU because they have no axon kernel yet.

Each such operator warns once; AXON_FALLBACK=error turns fallbacks into
NotImplementedError, to prove a program runs entirely on the device.
"""

from __future__ import annotations

from .. import _C


def fallback_ops() -> dict[str, int]:
    """{operator name: calls} of every operator that fell back to the CPU in this process."""
    return dict(_C._fallback_counts())


def reset_fallback_ops() -> None:
    _C._reset_fallback_counts()


def fallback_mode() -> str:
    """'warn' (default) or 'error', from AXON_FALLBACK."""
    return _C._fallback_mode()
