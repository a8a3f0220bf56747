"""The unboxed direct kernels (csrc/host_execution/direct_kernels.h).

Each case checks the result against the CPU and whether the direct path
took the call (the launch counter) or left it to the generic kernel, so a
case the direct path would get wrong cannot pass by having been declined.
"""

import pytest
import torch
from conftest import closed_gate, direct_launches, run_python


def same_as_cpu(function, *cpu_args, direct):
    """Runs `function` on axon copies of `cpu_args` and on the CPU; checks values, dtype, strides, and the path."""
    axon_args = [a.to("axon") if isinstance(a, torch.Tensor) else a for a in cpu_args]
    before = direct_launches()
    got = function(*axon_args)
    taken = direct_launches() > before
    expected = function(*cpu_args)
    assert got.device.type == "axon"
    assert got.dtype == expected.dtype and got.shape == expected.shape and got.stride() == expected.stride()
    torch.testing.assert_close(got.cpu(), expected, equal_nan=True)
    assert taken == direct, f"direct path {'not ' if direct else ''}taken"


g = torch.Generator().manual_seed(0)
x = torch.randn(5, 7, generator=g)
y = torch.randn(5, 7, generator=g)
ints = torch.randint(-50, 50, (5, 7), generator=g)
# Contiguous, but with channels-last strides (3, 1, 3, 3): the CPU's results keep them (test_torch's
# test_memory_format_propagation_rules).
ambiguous = torch.rand(10, 3, 1, 1, generator=g).to(memory_format=torch.channels_last)
row_major = ambiguous.clone(memory_format=torch.contiguous_format)


@pytest.mark.parametrize(
    "name,function,args",
    [
        ("add", lambda a, b: a + b, (x, y)),
        ("add alpha", lambda a, b: torch.add(a, b, alpha=-2.5), (x, y)),
        ("add python int", lambda a: a + 3, (x,)),
        ("add python float", lambda a: a + 0.25, (x,)),
        ("sub", lambda a, b: a - b, (x, y)),
        ("mul", lambda a, b: a * b, (x, y)),
        ("mul same tensor twice", lambda a: a * a, (x,)),
        ("div", lambda a, b: a / b, (x, y)),
        ("div by zero", lambda a: a / 0.0, (x,)),
        ("int add", lambda a: a + 7, (ints,)),
        ("int mul tensor", lambda a: a * a, (ints,)),
        ("half add", lambda a, b: a.half() + b.half(), (x, y)),
        ("bfloat16 mul", lambda a: a.bfloat16() * 3, (x,)),
        ("double sub", lambda a, b: a.double() - b.double(), (x, y)),
        ("offset views", lambda a, b: a[2:] + b[:3], (x, y)),
        ("relu", torch.relu, (x,)),
        ("relu int", torch.relu, (ints,)),
        ("sum", torch.sum, (x,)),
        ("sum int", torch.sum, (ints,)),
        ("sum of a transposed view", lambda a: a.t().sum(), (x,)),
        ("sum empty dims", lambda a: a.sum(dim=[]), (x,)),
        ("mm", lambda a, b: a @ b.t(), (x, y)),
        ("mm transposed operands", lambda a, b: a.t() @ b, (x, y)),
        ("mm empty", lambda a, b: a[:, :0] @ b[:0], (x, y)),
    ],
)
def test_direct_path_matches_the_cpu(name, function, args):
    same_as_cpu(function, *args, direct=True)


@pytest.mark.parametrize(
    "name,function,args",
    [
        ("broadcast", lambda a, b: a + b[0], (x, y)),
        ("mixed dtypes", lambda a, b: a + b.double(), (x, y)),
        ("int tensor with float number", lambda a: a * 0.5, (ints,)),
        ("int division promotes", lambda a: a / 2, (ints,)),
        ("strided operands", lambda a, b: a.t() + b.t(), (x, y)),
        ("bool operands", lambda a: (a > 0) + (a < 0), (x,)),
        ("complex", lambda a, b: torch.complex(a, b) * 2, (x, y)),
        ("python bool", lambda a: a + True, (x,)),
        ("0-dim CPU tensor", lambda a: a * torch.tensor(2.0), (x,)),
        ("sum over a dim", lambda a: a.sum(0), (x,)),
        ("sum keepdim", lambda a: a.sum(dim=[], keepdim=True), (x,)),
        ("sum with dtype", lambda a: a.sum(dtype=torch.float64), (x,)),
        ("integer mm", lambda a: a @ a.t(), (ints,)),
        ("number, channels-last strides", lambda a: a * 5, (ambiguous,)),
        ("relu, channels-last strides", lambda a: torch.relu(a), (ambiguous,)),
        ("sub, channels-last strides", lambda a, b: a - b, (ambiguous, row_major)),
        ("add, channels-last strides second", lambda a, b: a + b, (row_major, ambiguous)),
    ],
)
def test_other_calls_go_to_the_generic_kernel(name, function, args):
    same_as_cpu(function, *args, direct=False)


def test_fills_match_the_cpu_and_keep_other_views():
    base = torch.arange(24.0).reshape(4, 6)
    device_base = base.to("axon")
    before = direct_launches()
    device_base[1:3, 2:5].fill_(-1.5)
    device_base[3].zero_()
    mask = torch.ones(6, dtype=torch.bool, device="axon").fill_(False)
    assert direct_launches() - before >= 3
    base[1:3, 2:5].fill_(-1.5)
    base[3].zero_()
    assert torch.equal(device_base.cpu(), base)
    assert torch.equal(mask.cpu(), torch.zeros(6, dtype=torch.bool))
    before = direct_launches()
    assert torch.equal(torch.zeros(2, 3, dtype=torch.int16, device="axon").cpu(), torch.zeros(2, 3, dtype=torch.int16))
    assert direct_launches() == before + 1  # zeros allocates and queues its fill in one kernel
    complex_zeros = torch.zeros(2, dtype=torch.complex64, device="axon")
    assert torch.equal(complex_zeros.cpu(), torch.zeros(2, dtype=torch.complex64))
    # Expanded: elements share memory, so the generic kernel fills it (as the CPU does, without complaint).
    expanded = torch.zeros(1, device="axon").expand(3)
    before = direct_launches()
    expanded.fill_(2.0)
    assert direct_launches() == before and torch.equal(expanded.cpu(), torch.full((3,), 2.0))


def test_errors_raise_at_the_call():
    with pytest.raises(RuntimeError, match="overflow"):
        torch.zeros(3, dtype=torch.int8, device="axon").fill_(1000)
    with pytest.raises(RuntimeError, match="alpha must not be a floating point"):
        torch.add(
            torch.ones(3, dtype=torch.int64, device="axon"), torch.ones(3, dtype=torch.int64, device="axon"), alpha=0.5
        )
    with pytest.raises(RuntimeError, match="overflow"):
        torch.ones(2, dtype=torch.int8, device="axon").add(torch.ones(2, dtype=torch.int8, device="axon"), alpha=1000)
    with pytest.raises(RuntimeError, match="overflow"):
        torch.ones(2, dtype=torch.half, device="axon").sub(torch.ones(2, dtype=torch.half, device="axon"), alpha=1e10)
    with pytest.raises(RuntimeError, match="size of tensor a"):
        torch.ones(3, device="axon") + torch.ones(4, device="axon")
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        torch.ones(2, 3, device="axon") @ torch.ones(2, 3, device="axon")
    with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
        torch.relu(torch.ones(3, dtype=torch.bool, device="axon"))


def test_direct_kernels_are_queued_on_the_current_stream():
    a = torch.ones(1 << 16, device="axon")
    torch.axon.synchronize()
    before = direct_launches()
    with closed_gate() as stream:
        b = (a + 1) * 3
        c = torch.relu(b - 10).sum()
        b.zero_()
        assert not stream.query()
    assert direct_launches() - before == 6  # add, mul, sub, relu, sum, zero_
    torch.axon.synchronize()
    assert c.item() == 0.0 and torch.equal(b.cpu(), torch.zeros(1 << 16))


def test_direct_kernels_follow_side_streams_and_events():
    a = torch.full((1 << 16,), 2.0, device="axon")
    side = torch.Stream(device="axon")
    side.wait_stream(torch.axon.current_stream())
    with torch.axon.stream(side), closed_gate(side):
        b = a * a
        b.add_(1)  # through the generic kernel, ordered after the direct mul on the side stream
        done = torch.axon.Event()
        done.record()
    torch.axon.current_stream().wait_event(done)
    c = b + 1
    assert torch.equal(c.cpu(), torch.full((1 << 16,), 6.0))


def test_private_memory_takes_the_generic_kernel():
    # Memory the host cannot address: the direct kernels decline, and the generic kernel stages.
    result = run_python(
        """
        import torch, torch_axon
        a = torch.arange(6.0, device="axon")
        before = torch_axon._C._testing.direct_kernel_launches()
        out = (a + 1) * a - torch.relu(a).sum()
        assert torch_axon._C._testing.direct_kernel_launches() == before
        print(out.cpu().tolist())
        """,
        {"AXON_EMULATED_PRIVATE_MEMORY": "1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    a = torch.arange(6.0)
    assert result.stdout.strip() == str(((a + 1) * a - torch.relu(a).sum()).tolist())


def test_autograd_through_direct_kernels():
    a = torch.randn(4, 4, generator=g)
    b = torch.randn(4, 4, generator=g)
    a_axon = a.to("axon").requires_grad_()
    b_axon = b.to("axon").requires_grad_()
    torch.relu(a_axon @ b_axon * 2 - b_axon / 3 + 1).sum().backward()
    a.requires_grad_()
    b.requires_grad_()
    torch.relu(a @ b * 2 - b / 3 + 1).sum().backward()
    torch.testing.assert_close(a_axon.grad.cpu(), a.grad)
    torch.testing.assert_close(b_axon.grad.cpu(), b.grad)
