"""The foreach chains' element loops and their proofs
(csrc/host_execution/element_loops.h, element_loop_proofs.h).

On float and double, a chain whose calls all have a proven loop runs them
block by block over raw pointers instead of calling the CPU kernels per tile.
The values must stay those of PyTorch's per-tensor loop on the CPU, bit for
bit (any NaN matching any NaN), awkward values included.
"""

import math

import pytest
import torch
from conftest import assert_same_bits, closed_gate

import torch_axon

testing = torch_axon._C._testing
ElementOp = testing.ElementOp

# Sizes that cross the 32768-element tiles and the 1024-element blocks, leave
# ragged ends, hold one element, or none.
SIZES = [(70001,), (1025,), (1023,), (1,), (0,), (3, 5)]


def awkward_values(size, generator):
    """Normal values of many magnitudes, with zeros, infinities, NaNs and denormals sprinkled in."""
    values = torch.randn(size, generator=generator, dtype=torch.float64)
    values *= torch.exp2(torch.randint(-20, 21, size, generator=generator).to(torch.float64))
    flat = values.view(-1)
    specials = [0.0, -0.0, math.inf, -math.inf, math.nan, 1e-310, -1.0]
    for index in range(0, flat.numel(), 97):
        flat[index] = specials[(index // 97) % len(specials)]
    return values


def lists(dtype, seed):
    generator = torch.Generator().manual_seed(seed)
    cpu = [awkward_values(size, generator).to(dtype) for size in SIZES]
    return cpu, [t.to("axon") for t in cpu]


# Each chained operator, as (its element op, the call on lists x, y, z).
CALLS = [
    (ElementOp.add_scalar, lambda x, y, z: torch._foreach_add_(x, 0.3)),
    (ElementOp.add_scalar, lambda x, y, z: torch._foreach_add_(x, [0.5 * i - 1 for i in range(len(x))])),
    (ElementOp.add_list, lambda x, y, z: torch._foreach_add_(x, y, alpha=0.37)),
    (ElementOp.sub_list, lambda x, y, z: torch._foreach_sub_(x, y, alpha=-1.3)),
    # Integers whose negation wraps in c10::Scalar, as ATen's sub negates alpha before converting it.
    (ElementOp.sub_list, lambda x, y, z: torch._foreach_sub_(x, y, alpha=-(2**63))),
    (ElementOp.sub_list, lambda x, y, z: torch._foreach_sub_(x, y, alpha=2**64 - 1)),
    (ElementOp.sub_list, lambda x, y, z: torch._foreach_sub_(x, y, alpha=2**63 + 2**39 + 1)),
    (ElementOp.add_list_out, lambda x, y, z: torch._foreach_add(x, y, alpha=0.37)),
    (ElementOp.mul_scalar, lambda x, y, z: torch._foreach_mul_(x, 0.999)),
    (ElementOp.mul_scalar, lambda x, y, z: torch._foreach_mul_(x, [1.5 - 0.2 * i for i in range(len(x))])),
    (ElementOp.mul_list, lambda x, y, z: torch._foreach_mul_(x, y)),
    (ElementOp.mul_number, lambda x, y, z: torch._foreach_mul_(x, y[0].view(-1)[3].clone())),
    (ElementOp.div_scalar, lambda x, y, z: torch._foreach_div_(x, 0.3)),
    (ElementOp.div_scalar, lambda x, y, z: torch._foreach_div_(x, [0.7 + i for i in range(len(x))])),
    (ElementOp.div_list, lambda x, y, z: torch._foreach_div_(x, y)),
    (ElementOp.div_number, lambda x, y, z: torch._foreach_div_(x, y[0].view(-1)[3].clone())),
    (ElementOp.lerp_scalar, lambda x, y, z: torch._foreach_lerp_(x, y, 0.1)),
    (ElementOp.lerp_scalar, lambda x, y, z: torch._foreach_lerp_(x, y, 0.9)),
    (ElementOp.addcmul, lambda x, y, z: torch._foreach_addcmul_(x, y, z, 0.001)),
    (ElementOp.addcmul, lambda x, y, z: torch._foreach_addcmul_(x, y, z, [0.5 - i for i in range(len(x))])),
    (ElementOp.addcdiv, lambda x, y, z: torch._foreach_addcdiv_(x, y, z, -0.01)),
    (ElementOp.addcdiv, lambda x, y, z: torch._foreach_addcdiv_(x, y, z, [0.5 + i for i in range(len(x))])),
    (ElementOp.sqrt, lambda x, y, z: torch._foreach_sqrt_(x)),
    (ElementOp.sqrt_out, lambda x, y, z: torch._foreach_sqrt(x)),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("op, call", CALLS, ids=[f"{op.name}-{i}" for i, (op, _) in enumerate(CALLS)])
def test_every_chained_operator_runs_in_a_proven_loop_with_the_cpus_values(dtype, op, call):
    (x, ax), (y, ay), (z, az) = lists(dtype, 1), lists(dtype, 2), lists(dtype, 3)
    torch.axon.synchronize()
    rounds = testing.foreach_rounds_in_element_loops()
    expected, got = call(x, y, z), call(ax, ay, az)
    torch.axon.synchronize()
    # With PyTorch 2.13's x86-64 wheel every operator's loop is proven (the test below says which candidate).
    assert testing.foreach_rounds_in_element_loops() == rounds + 1
    if expected is None:  # in place
        expected, got = x, ax
    assert_same_bits(expected, got)


# The operators whose CPU kernel could round either way: exactly one of the
# candidates must pass its proof, which shows the probe tells them apart.
AMBIGUOUS = [
    ElementOp.add_list,
    ElementOp.sub_list,
    ElementOp.add_list_out,
    ElementOp.div_scalar,
    ElementOp.lerp_scalar,
    ElementOp.addcmul,
    ElementOp.sqrt,
    ElementOp.sqrt_out,
]


@pytest.mark.parametrize("is_double", [False, True])
@pytest.mark.parametrize("op", AMBIGUOUS, ids=[op.name for op in AMBIGUOUS])
def test_the_proof_tells_apart_candidates_that_round_differently(op, is_double):
    proven = testing.element_loop_candidates_proven(op, is_double)
    if len(proven) == 1:
        pytest.skip("one candidate in this build (square roots without MKL)")
    assert len(proven) == 2 and sum(proven) == 1, proven


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_adamw_with_clipping_matches_the_cpu_and_the_cpu_kernels_path_bit_for_bit(dtype):
    def run(device_lists):
        params = [t.clone().requires_grad_() for t in device_lists[0]]
        optimizer = torch.optim.AdamW(params, lr=1e-2, weight_decay=0.1, foreach=True)
        for step in range(3):
            for p, g in zip(params, lists(dtype, 10 + step)[device_lists[1]]):
                p.grad = g.nan_to_num(0.0, 1.0, -1.0)
            torch.nn.utils.clip_grad_norm_(params, 1.0, foreach=True)
            optimizer.step()
        return [p.detach() for p in params]

    cpu, axon = lists(dtype, 0)
    cpu = [t.nan_to_num(0.0, 1.0, -1.0) for t in cpu]
    axon = [t.nan_to_num(0.0, 1.0, -1.0) for t in axon]
    expected = run((cpu, 0))
    rounds = testing.foreach_rounds_in_element_loops()
    in_loops = run((axon, 1))
    torch.axon.synchronize()
    assert testing.foreach_rounds_in_element_loops() > rounds
    testing.set_element_loops_enabled(False)
    try:
        rounds = testing.foreach_rounds_in_element_loops()
        in_cpu_kernels = run((axon, 1))
        torch.axon.synchronize()
        assert testing.foreach_rounds_in_element_loops() == rounds
    finally:
        testing.set_element_loops_enabled(True)
    assert_same_bits(expected, in_loops)
    assert_same_bits(expected, in_cpu_kernels)


def test_a_round_with_a_call_without_a_loop_runs_every_call_through_the_cpu_kernels():
    # A bfloat16 call of the float chain's sizes joins it; bfloat16 has no loop.
    cpu, axon = lists(torch.float32, 4)
    cpu_half = [t.to(torch.bfloat16) for t in cpu]
    axon_half = [t.to(torch.bfloat16) for t in axon]
    torch.axon.synchronize()
    rounds = testing.foreach_rounds_in_element_loops()
    joined = testing.foreach_calls_joined()
    with closed_gate():
        torch._foreach_mul_(axon, 0.5)
        torch._foreach_add_(axon_half, 0.25)
        torch._foreach_mul_(axon, 3.0)
    torch.axon.synchronize()
    assert testing.foreach_calls_joined() == joined + 2
    assert testing.foreach_rounds_in_element_loops() == rounds
    torch._foreach_mul_(cpu, 0.5)
    torch._foreach_add_(cpu_half, 0.25)
    torch._foreach_mul_(cpu, 3.0)
    assert_same_bits(cpu, axon)
    assert_same_bits(cpu_half, axon_half)
