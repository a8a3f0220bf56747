"""Shape inference without Python: the operators that generation and data pipelines call at every new size.

Once torch._meta_registrations is imported (by torch._dynamo and by transformers), many operators' meta kernels
are Python, about 100-600 us a call. Shape inference runs PyTorch's C++ meta kernels or C++ transcriptions of the
Python ones instead (csrc/ops/native_meta_kernels.cpp). These tests check, at sizes not seen before, that no
Python meta kernel runs, that layouts, dtypes and values are the CPU's, and that bad calls raise the CPU's
error at the call.
"""

import warnings

import pytest
import torch
from test_call_shape_cache import _python_calls_during

import torch_axon  # noqa: F401


def _bools(n):
    return torch.arange(n) % 3 == 0


# name: (inputs at size n, on the CPU; the call)
CASES = {
    "any": (lambda n: (_bools(n),), torch.any),
    "all over a dimension": (lambda n: (_bools(2 * n).view(2, n),), lambda x: x.all(-1)),
    "any over dimensions": (lambda n: (_bools(2 * n).view(2, n),), lambda x: torch.any(x, dim=(0, 1))),
    "where with promotion": (lambda n: (_bools(n)[:, None], torch.randn(n, 5), torch.zeros(5, dtype=torch.float64)),
                             torch.where),
    "where of a transposed value": (lambda n: (_bools(n)[None, :], torch.randn(n, 3).t(), torch.randn(3, n)),
                                    torch.where),
    "masked_fill broadcast": (lambda n: (torch.randn(n), _bools(2 * n).view(2, n)),
                              lambda x, mask: x.masked_fill(mask, float("-inf"))),
    "masked_fill of a transposed input": (lambda n: (torch.randn(n, 2).t(), _bools(n)),
                                          lambda x, mask: x.masked_fill(mask, 1.5)),
    "masked_fill_ with a tensor value": (lambda n: (torch.randn(2, n), _bools(n), torch.tensor(2.0)),
                                         lambda x, mask, value: x.clone().masked_fill_(mask, value)),
    "logical_not of a slice": (lambda n: (torch.arange(2 * n)[::2],), torch.logical_not),
    "max": (lambda n: (torch.randn(n),), torch.max),
    "min": (lambda n: (torch.randn(n),), torch.min),
    "argmin": (lambda n: (torch.randn(3, n),), lambda x: x.argmin(-1)),
    "sort": (lambda n: (torch.randn(2, n),), lambda x: x.sort(-1)),
    "topk": (lambda n: (torch.randn(2, n),), lambda x: x.topk(2)),
    "index": (lambda n: (torch.randn(n, 4), torch.arange(n) % 3), lambda x, i: x[i]),
    "arange into out": (lambda n: (torch.empty(0, dtype=torch.long),),
                        lambda out: torch.arange(0, out.numel() + 7, out=out)),
    "remainder": (lambda n: (torch.randn(n), torch.full((n,), 0.7)), torch.remainder),
    "lerp": (lambda n: (torch.randn(n), torch.randn(n)), lambda a, b: torch.lerp(a, b, 0.25)),
    "prod": (lambda n: (torch.randn(2, n),), lambda x: x.prod(-1)),
}


def _on(device, values):
    return tuple(v.to(device) for v in values)


def _tensors(result):
    return list(result) if isinstance(result, tuple) else [result]


@pytest.mark.parametrize("case", list(CASES))
def test_new_sizes_run_no_python_meta_kernel_and_match_the_cpu(case):
    import torch._meta_registrations  # noqa: F401

    make, function = CASES[case]
    for n in (3, 4, 5):  # the first calls prove the layout class
        function(*_on("axon", make(n)))
    cpu_arguments = make(40)
    arguments = _on("axon", cpu_arguments)  # made outside the measured call
    results = []
    calls = _python_calls_during(lambda: results.append(function(*arguments)))
    assert calls == [], calls
    expected = function(*cpu_arguments)
    for result, cpu in zip(_tensors(results[0]), _tensors(expected)):
        assert (result.shape, result.stride(), result.dtype) == (cpu.shape, cpu.stride(), cpu.dtype)
        torch.testing.assert_close(result.cpu(), cpu, rtol=0, atol=0)


def test_the_first_call_of_a_layout_class_runs_no_python_meta_kernel():
    # Its CPU reference run copies meta tensors to CPU stand-ins; through the dispatcher that was Python.
    import torch._meta_registrations  # noqa: F401

    x = torch.randn(3, 14).to("axon")[:, 1::3]
    results = []
    calls = _python_calls_during(lambda: results.append(x.argmax(-1)))
    assert calls == [], calls
    torch.testing.assert_close(results[0].cpu(), x.cpu().argmax(-1))


BAD_CALLS = {
    "mask that does not broadcast": lambda d: torch.ones(2, 40, device=d).masked_fill(
        torch.ones(3, 40, dtype=torch.bool, device=d), 0.0),
    "mask that is not boolean": lambda d: torch.ones(2, 40, device=d).masked_fill(torch.ones(2, 40, device=d), 0.0),
    "fill value with dimensions": lambda d: torch.ones(2, 40, device=d).masked_fill_(
        torch.ones(2, 40, dtype=torch.bool, device=d), torch.ones(2, device=d)),
    "condition that is not boolean": lambda d: torch.where(torch.ones(40, device=d), torch.ones(40, device=d),
                                                          torch.zeros(40, device=d)),
    "max of nothing": lambda d: torch.ones(0, 40, device=d).max(),
    "arange with a zero step": lambda d: torch.arange(0, 40, 0, out=torch.empty(0, dtype=torch.long, device=d)),
    "arange of booleans": lambda d: torch.arange(0, 40, out=torch.empty(0, dtype=torch.bool, device=d)),
}


@pytest.mark.parametrize("case", list(BAD_CALLS))
def test_a_bad_call_at_a_new_size_raises_the_cpus_error_at_the_call(case):
    import torch._meta_registrations  # noqa: F401

    messages = []
    for device in ("cpu", "axon"):
        with pytest.raises(RuntimeError) as raised:
            BAD_CALLS[case](device)
            if device == "axon":
                torch.axon.synchronize()
        messages.append(str(raised.value))
    assert messages[0] == messages[1]


def test_masked_fill_of_an_expanded_tensor_warns_as_on_the_cpu():
    import torch._meta_registrations  # noqa: F401

    given = []
    for device in ("cpu", "axon"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            x = torch.zeros(1, 40, device=device).expand(3, 40)
            x.masked_fill_(torch.ones(3, 40, dtype=torch.bool, device=device), 1.0)
        given.append([str(w.message) for w in caught])
        assert x.cpu().tolist() == [[1.0] * 40] * 3
    assert given[0] == given[1]
