"""Which OpInfos the harness runs, and the deterministic CI sample."""

from __future__ import annotations

import functools

import torch


@functools.lru_cache(maxsize=1)
def operators() -> list:
    """op_db in a stable order (name, variant)."""
    from torch.testing._internal.common_methods_invocations import op_db

    return sorted(op_db, key=lambda op: (op.name, op.variant_test_name))


def sample_settings(op) -> dict:
    """The CI sample: every operator, one dtype (float32 when the CPU supports it), two samples each."""
    supported = op.supported_dtypes("cpu")
    dtype = torch.float32 if torch.float32 in supported else (sorted(supported, key=str)[0] if supported else None)
    return {"dtypes": [dtype] if dtype is not None else [], "max_samples": 2}
