"""Which OpInfos the harness runs, and the deterministic CI sample."""

from __future__ import annotations

import functools

import torch


@functools.lru_cache(maxsize=1)
def operators() -> list:
    """op_db and the _foreach_* OpInfos (kept apart from op_db upstream) in a stable order (name, variant)."""
    from torch.testing._internal.common_methods_invocations import (
        foreach_binary_op_db,
        foreach_other_op_db,
        foreach_pointwise_op_db,
        foreach_reduce_op_db,
        foreach_unary_op_db,
        op_db,
    )

    foreach = (foreach_unary_op_db + foreach_binary_op_db + foreach_pointwise_op_db + foreach_reduce_op_db
               + foreach_other_op_db)
    return sorted(op_db + foreach, key=lambda op: (op.name, op.variant_test_name))


@functools.lru_cache(maxsize=1)
def entries() -> list[tuple[str, object]]:
    """Everything the harness runs: ("op", OpInfo), ("module", ModuleInfo), ("optim", OptimizerInfo)."""
    from torch.testing._internal.common_modules import module_db
    from torch.testing._internal.common_optimizers import optim_db

    return ([("op", op) for op in operators()] + [("module", m) for m in sorted(module_db, key=lambda m: m.name)]
            + [("optim", o) for o in sorted(optim_db, key=lambda o: o.name)])


def entry_label(kind: str, info) -> str:
    if kind == "op":
        return f"{info.name}.{info.variant_test_name}" if info.variant_test_name else info.name
    return f"{kind if kind == 'module' else 'optim'}:{info.name}"


def sample_settings(op) -> dict:
    """The CI sample: every operator, one dtype (float32 when the CPU supports it), two samples each."""
    supported = op.supported_dtypes("cpu")
    dtype = torch.float32 if torch.float32 in supported else (sorted(supported, key=str)[0] if supported else None)
    return {"dtypes": [dtype] if dtype is not None else [], "max_samples": 2}
