"""The chained _foreach_* kernels (csrc/host_execution/foreach_chains.h).

Values are compared bit for bit with PyTorch's per-tensor loop on the CPU
(foreach=True there runs that loop). Whether calls joined a chain is read
from the kernels' counters, with the stream held by a gate so that no chain
can start running while the calls are queued.
"""

import contextlib

import pytest
import torch
from conftest import assert_same_bits, closed_gate

import torch_axon

# Sizes that cross the kernels' 32768-element tiles, leave a ragged last
# tile, hold one element, or none.
SIZES = [(70001,), (256, 129), (32768,), (), (1,), (0,), (3, 5)]


@contextlib.contextmanager
def cpu_threads(count):
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def counters():
    return torch_axon._C._testing.foreach_chains_started(), torch_axon._C._testing.foreach_calls_joined()


def pairs(dtype, seed=0):
    generator = torch.Generator().manual_seed(seed)
    cpu = [torch.randn(size, generator=generator, dtype=torch.float64).to(dtype) for size in SIZES]
    return cpu, [t.to("axon") for t in cpu]


def assert_bitwise_equal(cpu, axon):
    assert all(got.device.type == "axon" for got in axon)
    assert_same_bits(cpu, axon)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
@pytest.mark.parametrize(
    "name, options",
    [
        ("AdamW", {"lr": 1e-2}),
        ("Adam", {"lr": 1e-2, "weight_decay": 0.1}),
        ("Adam", {"lr": 1e-2, "amsgrad": True}),
        ("AdamW", {"lr": 1e-2, "maximize": True}),
        ("SGD", {"lr": 0.1, "momentum": 0.9, "weight_decay": 1e-3}),
        ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    ],
)
def test_optimizer_steps_match_the_cpu_bit_for_bit(dtype, name, options):
    cpu, axon = pairs(dtype)
    cpu_params = [t.clone().requires_grad_() for t in cpu]
    axon_params = [t.clone().requires_grad_() for t in axon]
    cpu_optimizer = getattr(torch.optim, name)(cpu_params, foreach=True, **options)
    axon_optimizer = getattr(torch.optim, name)(axon_params, **options)  # axon's default is foreach
    for step in range(3):
        grads, axon_grads = pairs(dtype, seed=step + 1)
        for p, q, g, h in zip(cpu_params, axon_params, grads, axon_grads):
            p.grad, q.grad = g, h
        # One CPU thread: on half and bfloat16, the CPU's add with an alpha
        # rounds an element differently on its vectorized and scalar paths,
        # so its values depend on where its threads split a tensor (axon's
        # plain add_ differs from it the same way). Undivided, as axon's
        # tiles leave the vectors, the CPU gives one answer.
        with cpu_threads(1):
            cpu_optimizer.step()
        axon_optimizer.step()
    assert_bitwise_equal([p.detach() for p in cpu_params], [q.detach() for q in axon_params])
    for cpu_state, axon_state in zip(cpu_optimizer.state.values(), axon_optimizer.state.values()):
        for key, value in cpu_state.items():
            if torch.is_tensor(value) and value.device.type == "cpu" and axon_state[key].device.type == "axon":
                assert_bitwise_equal([value], [axon_state[key]])


def test_calls_queued_back_to_back_join_one_chain():
    cpu, axon = pairs(torch.float32)
    others_cpu, others = pairs(torch.float32, seed=1)
    started, joined = counters()
    with closed_gate():
        torch._foreach_mul_(axon, 0.5)
        torch._foreach_add_(axon, others, alpha=2.0)
        torch._foreach_addcmul_(axon, others, others, 0.25)
        # abs has no chained kernel: its per-tensor launches come between, so sqrt starts a new chain.
        roots = torch._foreach_sqrt(torch._foreach_abs(axon))
        torch._foreach_div_(roots, [float(i + 1) for i in range(len(roots))])
    assert counters() == (started + 2, joined + 3)
    torch._foreach_mul_(cpu, 0.5)
    torch._foreach_add_(cpu, others_cpu, alpha=2.0)
    torch._foreach_addcmul_(cpu, others_cpu, others_cpu, 0.25)
    expected_roots = torch._foreach_sqrt(torch._foreach_abs(cpu))
    torch._foreach_div_(expected_roots, [float(i + 1) for i in range(len(roots))])
    assert_bitwise_equal(cpu, axon)
    assert_bitwise_equal(expected_roots, roots)


def test_work_queued_in_between_starts_a_new_chain_and_keeps_its_place():
    # Were the second call to join the first's chain, it would run before the
    # add_ queued between them: (x * 6) + 1 instead of (x * 2 + 1) * 3.
    x = torch.ones(40000, device="axon")
    started, joined = counters()
    with closed_gate():
        torch._foreach_mul_([x], 2.0)
        x.add_(1.0)
        torch._foreach_mul_([x], 3.0)
    assert counters() == (started + 2, joined)
    assert torch.equal(x.cpu(), torch.full((40000,), 9.0))


def test_an_event_recorded_in_between_starts_a_new_chain():
    x = torch.ones(8, device="axon")
    started, joined = counters()
    with closed_gate():
        torch._foreach_mul_([x], 2.0)
        torch.axon.current_stream().record_event()
        torch._foreach_mul_([x], 3.0)
    assert counters() == (started + 2, joined)
    assert torch.equal(x.cpu(), torch.full((8,), 6.0))


def test_a_call_on_other_memory_layout_than_the_chain_starts_a_new_chain():
    # b overlaps a without being a: running them tile by tile would interleave
    # the two calls on the shared elements in another order than one after the other.
    buffer = torch.arange(100000, dtype=torch.float32, device="axon")
    expected = buffer.cpu()
    a, b = buffer[:60000], buffer[30000:90000]
    started, joined = counters()
    with closed_gate():
        torch._foreach_add_([a], 1.0)
        torch._foreach_mul_([b], 2.0)
        torch._foreach_mul_([a], 3.0)  # a again, but b's chain holds memory a overlaps: a third chain
    assert counters() == (started + 3, joined)
    expected[:60000] += 1.0
    expected[30000:90000] *= 2.0
    expected[:60000] *= 3.0
    assert torch.equal(buffer.cpu(), expected)


def test_the_same_tensor_at_the_same_position_joins():
    p = torch.randn(50000, device="axon")
    g = torch.randn(50000, device="axon")
    expected, expected_g = p.cpu(), g.cpu()
    started, joined = counters()
    with closed_gate():
        torch._foreach_addcmul_([p], [g], [g], 0.5)  # g twice in one call
        torch._foreach_lerp_([p], [g], 0.25)
    assert counters() == (started + 1, joined + 1)
    expected.addcmul_(expected_g, expected_g, value=0.5).lerp_(expected_g, 0.25)
    assert torch.equal(p.cpu(), expected)


def test_lists_whose_tensors_overlap_take_the_per_tensor_loop():
    buffer = torch.zeros(20, device="axon")
    started, joined = counters()
    torch._foreach_add_([buffer[0:10], buffer[5:15]], 1.0)
    assert counters() == (started, joined)
    expected = torch.zeros(20)
    torch._foreach_add_([expected[0:10], expected[5:15]], 1.0)
    assert torch.equal(buffer.cpu(), expected)


def test_calls_outside_the_chains_take_the_per_tensor_loop_with_its_results_and_errors():
    started, joined = counters()
    strided = torch.randn(6, 4, device="axon").t()
    torch._foreach_mul_([strided], 2.0)
    integers = torch.arange(6, device="axon")
    torch._foreach_add_([integers], 1)
    assert torch.equal(integers.cpu(), torch.arange(1, 7))
    with pytest.raises(RuntimeError, match="same number of tensors"):
        torch._foreach_add_([torch.ones(2, device="axon")], [torch.ones(2, device="axon")] * 2)
    with pytest.raises(RuntimeError):
        torch._foreach_add_([torch.ones(2, device="axon")], [torch.ones(3, device="axon")])
    with pytest.raises(RuntimeError):
        torch._foreach_mul_([torch.ones(2, device="axon")], 1 + 2j)
    assert counters() == (started, joined)


def test_a_chain_on_a_busy_stream_keeps_stream_order_with_other_streams():
    x = torch.ones(70000, device="axon")
    side = torch.axon.Stream()
    with closed_gate():
        torch._foreach_mul_([x], 2.0)
        torch._foreach_add_([x], 1.0)
        done = torch.axon.current_stream().record_event()
    side.wait_event(done)
    with torch.axon.stream(side):
        y = x * 10
    torch.axon.synchronize()
    assert torch.equal(y.cpu(), torch.full((70000,), 30.0))


def test_a_number_tensor_every_position_reads_joins_and_keeps_its_value():
    grads = [torch.randn(size, device="axon") for size in [(70001,), (3, 4)]]
    expected = [g.cpu() for g in grads]
    scale = torch.tensor(0.25, device="axon")
    started, joined = counters()
    with closed_gate():
        torch._foreach_mul_(grads, scale)
        torch._foreach_div_(grads, scale)  # scale read again: the same extent, shared by every position
        torch._foreach_add_(grads, 1.0)
    assert counters() == (started + 1, joined + 2)
    for got, cpu in zip(grads, expected):
        assert torch.equal(got.cpu(), cpu.mul_(torch.tensor(0.25)).div_(torch.tensor(0.25)).add_(1.0))


def test_a_call_writing_a_number_tensor_the_chain_reads_starts_a_new_chain():
    # Tile by tile, the second call would scale `scale` at position 0 before
    # the first call reads it for position 1, which would then get 6, not 2.
    scale = torch.tensor(2.0, device="axon")
    grads = [torch.ones(1, device="axon"), torch.ones(1, device="axon")]
    other = torch.ones(1, device="axon")
    started, joined = counters()
    with closed_gate():
        torch._foreach_mul_(grads, scale)
        torch._foreach_mul_([scale.view(1), other], 3.0)
    assert counters() == (started + 2, joined)
    assert grads[1].item() == 2.0 and scale.item() == 6.0


def test_gradient_clipping_then_adamw_matches_the_cpu_bit_for_bit():
    cpu, axon = pairs(torch.float32)
    cpu_params = [t.clone().requires_grad_() for t in cpu]
    axon_params = [t.clone().requires_grad_() for t in axon]
    cpu_optimizer = torch.optim.AdamW(cpu_params, foreach=True)
    axon_optimizer = torch.optim.AdamW(axon_params)
    for step in range(3):
        grads, axon_grads = pairs(torch.float32, seed=step + 1)
        for p, q, g, h in zip(cpu_params, axon_params, grads, axon_grads):
            p.grad, q.grad = g * 10, h * 10
        torch.nn.utils.clip_grad_norm_(cpu_params, 1.0, foreach=True)
        torch.nn.utils.clip_grad_norm_(axon_params, 1.0)
        # One CPU thread: on half and bfloat16, the CPU's add with an alpha
        # rounds an element differently on its vectorized and scalar paths,
        # so its values depend on where its threads split a tensor (axon's
        # plain add_ differs from it the same way). Undivided, as axon's
        # tiles leave the vectors, the CPU gives one answer.
        with cpu_threads(1):
            cpu_optimizer.step()
        axon_optimizer.step()
    assert_bitwise_equal([p.detach() for p in cpu_params], [q.detach() for q in axon_params])


def test_chained_in_place_calls_bump_versions_so_autograd_sees_the_change():
    for device in ("cpu", "axon"):
        a = torch.tensor([0.5, 1.0], device=device, requires_grad=True)
        b = a * 1
        c = b.sin()
        before = b._version
        torch._foreach_add_([b], 1.0)
        torch._foreach_mul_([b], 2.0)
        assert b._version == before + 2
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            c.sum().backward()


def test_in_place_on_an_inference_tensor_outside_inference_mode_raises_at_the_call_as_on_the_cpu():
    results = []
    for device in ("cpu", "axon"):
        with torch.inference_mode():
            t = torch.ones(3, device=device)
        with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
            torch._foreach_add_([t], 1.0)
        results.append(t.cpu())  # the CPU's loop writes, then raises as it bumps the version
    assert torch.equal(results[0], results[1])


def test_errors_the_cpu_raises_at_the_call_are_raised_at_the_call():
    x = [torch.ones(4, device="axon"), torch.ones(4, device="axon")]
    with pytest.raises(RuntimeError, match="same number of elements as scalar list"):
        torch._foreach_add_(x, [1.0])  # a one-element scalar list is not one number for every tensor
    with pytest.raises(RuntimeError, match="expected dtype float"):
        torch._foreach_lerp_(x, [torch.ones(4, dtype=torch.float64, device="axon")] * 2, 0.5)
    halves = [torch.ones(4, dtype=torch.float16, device="axon")]
    with pytest.raises(RuntimeError, match="without overflow"):
        torch._foreach_add_(halves, halves, alpha=1e10)
    torch.axon.synchronize()  # nothing failed on the worker either
    torch._foreach_add_(x, 10.0)
    assert torch.equal(x[0].cpu(), torch.full((4,), 11.0))
    torch._foreach_add_(halves, 1e6)  # a number the dtype overflows: inf, as on the CPU, no error
    assert halves[0].cpu().isinf().all()


def test_a_number_a_float_overflows_is_inf_in_a_chain_as_on_the_cpu():
    # The chained loops take numbers as the CPU's kernels read them (a plain cast), and alphas checked.
    cpu = [torch.ones(4), -torch.ones(4)]
    axon = [t.to("axon") for t in cpu]
    for tensors in (cpu, axon):
        torch._foreach_mul_(tensors, 1e300)
        torch._foreach_add_(tensors, [1e300, -1e300])
    assert_same_bits(cpu, axon)
    with pytest.raises(RuntimeError, match="without overflow"):
        torch._foreach_add_(axon, axon, alpha=1e300)
