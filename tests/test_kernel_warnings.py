"""Warnings that only the CPU kernel gives, not the meta kernel (csrc/ops/shape_inference.cpp,
csrc/host_execution/worker_warnings.*): each call gives them as a Python warning at the call, as on the CPU, and
the kernel's run on the device's worker does not print them a second time."""

import warnings

import pytest
import torch

CALLS = {
    # IndexingUtils' deprecation of uint8 masks: index_put_'s meta kernel does not reach it.
    "uint8 mask index_put_": lambda d: torch.ones(10, 10, device=d).index_put_(
        (torch.zeros(10, dtype=torch.uint8, device=d),), torch.ones(0, 10, device=d), accumulate=True),
    # ReduceOps' degrees of freedom: var_mean's meta kernel does not check them.
    "var_mean with correction 5": lambda d: torch.var_mean(torch.ones(3, device=d), correction=5),
    "std_mean over a dimension": lambda d: torch.std_mean(torch.ones(2, 3, device=d), dim=1, correction=3),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_every_call_warns_at_the_call_as_on_the_cpu_and_once(call, capfd):
    function = CALLS[call]
    given = []
    for device in ("cpu", "axon"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(3):  # the first call at these sizes, then two the call cache answers
                function(device)
            torch.axon.synchronize()
        given.append([str(w.message) for w in caught])
    assert given[1] == given[0] and len(given[0]) == 3
    # The worker's own run of the kernel used to print each one to standard error instead.
    assert "Warning:" not in capfd.readouterr().err
