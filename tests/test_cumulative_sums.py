"""cumsum by axon's kernel (csrc/host_execution/cumulative_sum_rows.h): the CPU's values bit for bit.

Each case compares with the CPU (dtype, sizes, strides, every bit, NaNs in the same places) and checks by the
direct kernels' launch counter whether axon's kernel took the call, so a case it got wrong cannot pass by
having been declined.
"""

import pytest
import torch
from conftest import direct_launches


def check(x, dim, *, direct, **kwargs):
    before = direct_launches()
    got = torch.cumsum(x.to("axon"), dim, **kwargs).cpu()
    taken = direct_launches() > before
    expected = torch.cumsum(x, dim, **kwargs)
    assert got.dtype == expected.dtype and got.shape == expected.shape and got.stride() == expected.stride()
    assert torch.equal(got.isnan(), expected.isnan())
    assert torch.equal(got.nan_to_num(0.0, 1.0, -1.0), expected.nan_to_num(0.0, 1.0, -1.0))
    assert taken == direct, f"axon's kernel {'not ' if direct else ''}taken"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(6, 130, 33), (9, 1000), (1000, 3), (1,), (5, 1, 7), (3, 300, 2)])
def test_every_dimension_of_each_shape(dtype, shape):
    generator = torch.Generator().manual_seed(len(shape))
    # Large and small magnitudes together, where a sum carried in float instead of double would round apart.
    x = torch.randn(shape, generator=generator, dtype=dtype) * torch.logspace(-3, 6, shape[-1], dtype=dtype)
    for dim in range(-len(shape), len(shape)):
        check(x, dim, direct=True)


def test_blocks_of_columns_and_lines_split_among_threads():
    # 4096 rows of 1024 floats: the columns take 4 blocks a slice and the rows 4 lines a task, each split
    # among the worker's team; 4 MiB, so the team runs them.
    x = torch.randn(4096, 1024, generator=torch.Generator().manual_seed(1))
    check(x, 0, direct=True)
    check(x, 1, direct=True)
    check(x.view(32, 128, 1024), 1, direct=True)


def test_the_dtype_argument_when_it_is_the_inputs_own():
    x = torch.randn(40, 50, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    check(x, 1, direct=True, dtype=torch.float64)


def test_infinities_and_nans_where_the_cpu_puts_them():
    x = torch.randn(7, 9, generator=torch.Generator().manual_seed(3))
    x[0, 2] = float("inf")
    x[1, 2] = float("inf")
    x[1, 5] = -float("inf")
    x[2, 4] = float("nan")
    x[3, 0] = 3e38  # the double sum passes float's largest value and rounds to infinity, as on the CPU
    x[3, 1] = 3e38
    x[3, 2] = -3e38
    for dim in (0, 1):
        check(x, dim, direct=True)


@pytest.mark.parametrize("name, call", [
    ("summed in another dtype", lambda x: ((x, 1), {"dtype": torch.float64})),
    ("integers", lambda x: ((x.long(), 1), {})),
    ("half precision", lambda x: ((x.half(), 1), {})),
    ("not contiguous", lambda x: ((x.t(), 1), {})),
    ("a zero-dimensional tensor", lambda x: ((x[0, 0], 0), {})),
    ("no elements", lambda x: ((x[:0], 1), {})),
])
def test_other_calls_take_the_generic_kernel(name, call):
    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(4))
    (tensor, dim), kwargs = call(x)
    check(tensor, dim, direct=False, **kwargs)


def test_a_dimension_out_of_range_raises_the_cpus_error_at_the_call():
    x = torch.randn(3, 4)
    with pytest.raises(IndexError) as on_cpu:
        torch.cumsum(x, 2)
    with pytest.raises(IndexError) as on_axon:
        torch.cumsum(x.to("axon"), 2)
    assert str(on_axon.value) == str(on_cpu.value)


def test_gradients_equal_the_cpus():
    x = torch.randn(16, 40, generator=torch.Generator().manual_seed(5))
    grads = []
    for device in ("cpu", "axon"):
        leaf = x.to(device).detach().clone().requires_grad_()
        (torch.cumsum(leaf, 0) * torch.cumsum(leaf, 1)).sum().backward()
        grads.append(leaf.grad.cpu())
    assert torch.equal(grads[1], grads[0])
