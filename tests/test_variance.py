"""var, std, var_mean and std_mean along one dimension by axon's kernel (csrc/host_execution/variance_rows.h).

Each case compares with the CPU (sizes, strides, NaN and infinity positions, values within one unit in the last
place of a float: both carry double precision into the float rounding) and checks by the direct kernels' launch
counter whether axon's kernel took the call, so a case it got wrong cannot pass by having been declined.
"""

import warnings

import pytest
import torch
from conftest import direct_launches

FUNCTIONS = [torch.var, torch.std, torch.var_mean, torch.std_mean]


def check(function, x, *args, direct, **kwargs):
    before = direct_launches()
    got = function(x.to("axon"), *args, **kwargs)
    taken = direct_launches() > before
    expected = function(x, *args, **kwargs)
    got, expected = (got, expected) if isinstance(got, tuple) else ((got,), (expected,))
    for g, e in zip(got, expected):
        g = g.cpu()
        assert g.dtype == e.dtype and g.shape == e.shape and g.stride() == e.stride()
        assert torch.equal(g.isnan(), e.isnan()) and torch.equal(g.isinf(), e.isinf())
        finite = e.isfinite()
        torch.testing.assert_close(g[finite], e[finite], rtol=2.4e-7, atol=0)  # 1 ulp of a float
    assert taken == direct, f"axon's kernel {'not ' if direct else ''}taken"


@pytest.mark.parametrize("function", FUNCTIONS)
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_each_dimension_and_keepdim(function, dim, keepdim):
    x = torch.randn(6, 130, 33, generator=torch.Generator().manual_seed(dim + 7))
    check(function, x, dim, keepdim=keepdim, direct=True)


@pytest.mark.parametrize("correction", [0, 1, 2, 0.5, 129])
def test_corrections(correction):
    x = torch.randn(4, 130, generator=torch.Generator().manual_seed(1)) * 3 + 5
    for function in FUNCTIONS:
        check(function, x, -1, correction=correction, direct=True)
    check(torch.var, x, 1, unbiased=False, direct=True)


def test_rows_large_enough_to_split_among_threads():
    x = torch.randn(512, 1024, generator=torch.Generator().manual_seed(2))
    for function in FUNCTIONS:
        check(function, x, -1, direct=True)
        check(function, x, 0, direct=True)


def test_offsets_small_spreads_and_scales():
    generator = torch.Generator().manual_seed(3)
    for offset, scale in [(1e4, 1e-3), (0.0, 1e-30), (-3e30, 1e28), (1.0, 0.0)]:
        x = torch.randn(9, 65, 5, generator=generator) * scale + offset
        for function in FUNCTIONS:
            check(function, x, 1, direct=True)


def test_infinities_and_nans_where_the_cpu_puts_them():
    # The CPU's running mean stays infinite only when the infinity is the last element it meets.
    x = torch.randn(6, 7, generator=torch.Generator().manual_seed(4))
    x[0, 6] = float("inf")
    x[1, 2] = float("inf")
    x[2, 6] = -float("inf")
    x[2, 0] = float("inf")
    x[3, 3] = float("nan")
    x[4, 6] = float("nan")
    for function in FUNCTIONS:
        check(function, x, 1, direct=True)
        check(function, x.t().contiguous(), 0, direct=True)


@pytest.mark.parametrize("name, call", [
    ("float64", lambda x: torch.var(x.double(), 1)),
    ("two dimensions", lambda x: torch.var(x, (0, 1))),
    ("every dimension", lambda x: torch.var(x)),
    ("one element per result", lambda x: torch.std(x[:, :1], 1, correction=0)),
    ("a one-dimensional tensor", lambda x: torch.var(x[0], 0)),
    ("not contiguous", lambda x: torch.var(x.t(), 1)),
])
def test_other_calls_take_the_generic_kernel(name, call):
    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(5))
    before = direct_launches()
    got = call(x.to("axon"))
    assert direct_launches() == before, f"{name}: taken by axon's kernel"
    torch.testing.assert_close(got.cpu(), call(x))


def test_degrees_of_freedom_at_most_zero_warn_as_on_the_cpu():
    x = torch.randn(3, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = torch.var(x.to("axon"), 1, correction=2)
    assert any("degrees of freedom is <= 0" in str(w.message) for w in caught)
    assert torch.equal(got.cpu().isinf(), torch.var(x, 1, correction=2).isinf())


def test_gradients_equal_the_cpus():
    x = torch.randn(16, 40, generator=torch.Generator().manual_seed(6))
    grads = []
    for device in ("cpu", "axon"):
        leaf = x.to(device).detach().clone().requires_grad_()
        variance, mean = torch.var_mean(leaf, 1)
        (variance.sum() + torch.std(leaf, 0).sum() + mean.sum()).backward()
        grads.append(leaf.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0], rtol=1e-6, atol=1e-7)
