"""One letter per kernel argument, from the C types Inductor's C++ kernels take (see
``csrc/host_execution/compiled_host_kernel.h``): r (``const T*``), w (``T*``), i (``int64_t``), f (``float``)."""

from __future__ import annotations

from collections.abc import Sequence


def argument_kind(c_type: str) -> str | None:
    """The kind of one argument, or None for a type the slot entry point cannot pass."""
    c_type = c_type.strip()
    if c_type.endswith("*"):
        return "r" if c_type.startswith("const ") else "w"
    base = c_type.removeprefix("const ").strip()
    if base in ("int64_t", "long", "long int"):
        return "i"
    if base == "float":
        return "f"
    return None


def argument_kinds(c_types: Sequence[str]) -> str | None:
    """The kinds of all arguments, or None if any cannot go through a slot."""
    kinds = [argument_kind(c_type) for c_type in c_types]
    return None if None in kinds else "".join(kinds)
