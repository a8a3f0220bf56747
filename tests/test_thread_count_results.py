"""Values that depend on how many threads compute them are the CPU's: those kernels run with the worker's team.

ATen reduces a tensor to one value in a part per thread (from 32K elements) and adds the parts; MKL splits a
dot product's or a long matrix product's sum among its threads. A kernel below 1 MiB of operands otherwise runs
on the worker's thread alone (host_execution/stream_launch.h), which gave other bits than the CPU's two threads:
a dot product of 70,001 floats -14.359825 against -14.359283 (fuzz seed 691264). Each case compares every bit.
"""

import pytest
import torch
import torch.nn.functional as F

pytestmark = pytest.mark.skipif(torch.get_num_threads() < 2, reason="one thread gives one summation order")

REDUCTIONS = {
    "sum": lambda x: x.sum(),
    "sum over every dim": lambda x: x.view(-1, 8).sum((0, 1)),
    "mean": lambda x: x.mean(),
    "nansum": lambda x: x.nansum(),
    "prod": lambda x: (1 + x / 1e4).prod(),
    "half sum": lambda x: x.half().sum(),
    "bfloat16 sum": lambda x: x.bfloat16().sum(),
    "mse_loss": lambda x: F.mse_loss(x, x * 0.5),
    "l1_loss": lambda x: F.l1_loss(x, x * 0.5),
    "smooth_l1_loss": lambda x: F.smooth_l1_loss(x, x * 0.5),
    "binary_cross_entropy": lambda x: F.binary_cross_entropy(torch.sigmoid(x), torch.ones_like(x)),
    "dot": lambda x: torch.dot(x, x.flip(0)),
    "vdot": lambda x: torch.vdot(x, x.flip(0)),
    "mv, 8 columns": lambda x: torch.mv(x.view(-1, 8), torch.arange(8.0, device=x.device)),
}


def same_bits(function, *tensors):
    expected = function(*tensors)
    got = function(*[t.to("axon") for t in tensors]).cpu()
    return got.dtype == expected.dtype and torch.equal(got, expected)


@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions_to_one_value_add_in_the_cpus_parts(name):
    generator = torch.Generator().manual_seed(7)
    differing = [n for n in (40000, 65536, 100000, 150000, 200000, 250000)
                 if not same_bits(REDUCTIONS[name], torch.randn(n, generator=generator))]
    assert not differing, f"{name}: other bits than the CPU's at {differing} elements"


@pytest.mark.parametrize("m, k, n", [(1, 50000, 1), (1, 60000, 2), (4, 16384, 4), (8, 20000, 8), (2, 30000, 16)])
def test_products_with_long_sums_split_them_as_the_cpu_does(m, k, n):
    generator = torch.Generator().manual_seed(m * n)
    a, b = torch.randn(m, k, generator=generator), torch.randn(k, n, generator=generator)
    assert same_bits(lambda a, b: a @ b, a, b)
    assert same_bits(lambda a, b: torch.addmm(torch.ones(m, n, device=a.device), a, b), a, b)
    assert same_bits(lambda a, b: F.linear(a, b.t().contiguous()), a, b)


def test_the_fuzz_seeds_dot_product():
    t2 = torch.randn((70001,), generator=torch.Generator().manual_seed(691264003), dtype=torch.float64).float()
    t3 = torch.full_like(t2, 2)
    assert same_bits(torch.dot, t2, t3)
