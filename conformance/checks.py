"""Running one check and turning its outcome into a Result (shared by all case runners)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch

import torch_axon

from .comparison import Mismatch
from .results import Outcome, Result


def drain() -> None:
    """Clears errors still pending on the devices after a failed check."""
    for index in range(torch.axon.device_count()):
        try:
            torch.axon.synchronize(index)
        except RuntimeError:
            pass


def require_native() -> None:
    """Raises Mismatch if an operator fell back to the CPU since the last reset_fallback_ops()."""
    fell_back = torch_axon.fallback_ops()
    if fell_back:
        raise Mismatch("fell back to the CPU: " + ", ".join(sorted(fell_back)))


def run_check(operator: str, check: str, dtype: str, body: Callable[[], Any]) -> Result:
    """PASSED if `body` returns; FAILED with the mismatch, or with what axon raised where the CPU did not."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            body()
    except Mismatch as mismatch:
        drain()
        return Result(operator, check, dtype, Outcome.FAILED, str(mismatch)[:300])
    except Exception as error:
        drain()
        return Result(operator, check, dtype, Outcome.FAILED,
                      f"axon raised {type(error).__name__}: {str(error)[:240]}")
    return Result(operator, check, dtype, Outcome.PASSED)
