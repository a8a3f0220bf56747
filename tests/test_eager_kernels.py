"""Compiled eager kernels (csrc/compiled_execution/): ATen calls run as StableHLO executables per call shape.

Each test switches the provider to "compiled" (on the emulated driver it is "host" by default) and compares
with the CPU; the counters prove which provider ran. The last tests run on the PJRT driver, where "auto"
means compiled.
"""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
from conftest import run_python

import torch_axon


@pytest.fixture(autouse=True)
def compiled_kernels():
    previous, after = torch.axon.eager_kernels(), torch_axon._C._eager_compile_after()
    torch.axon.set_eager_kernels("compiled")
    torch_axon._C._set_eager_compile_after(1)  # compile at the first call: each test's calls are its own shapes
    torch.axon.reset_compiled_kernel_stats()
    yield
    torch.axon.set_eager_kernels(previous)
    torch_axon._C._set_eager_compile_after(after)


def stats():
    return torch.axon.compiled_kernel_stats()


def test_the_default_is_auto_and_bad_modes_are_refused():
    result = run_python("import torch, torch_axon; print(torch.axon.eager_kernels())", {"AXON_EAGER_KERNELS": ""})
    assert result.stdout.strip() == "auto", result.stderr[-2000:]
    with pytest.raises(ValueError, match="host', 'compiled' or 'auto"):
        torch.axon.set_eager_kernels("fast")


def test_operators_run_as_compiled_kernels_and_match_the_cpu():
    torch.manual_seed(0)
    x, y, w = torch.randn(6, 8), torch.randn(6, 8), torch.randn(8, 3)
    checks = {
        "add": lambda a, b, w: a + b,
        "mul_scalar": lambda a, b, w: a * 2.5 - 1,
        "mm": lambda a, b, w: a @ w,
        "layer_norm": lambda a, b, w: torch.nn.functional.layer_norm(a, (8,)),
        "softmax": lambda a, b, w: a.softmax(-1),
        "sum": lambda a, b, w: a.sum(1),
        "where": lambda a, b, w: torch.where(a > b, a, b),
        "cat": lambda a, b, w: torch.cat([a, b], 1),
        "int_ops": lambda a, b, w: (a * 10).to(torch.int64) // 3,
    }
    for name, f in checks.items():
        expected = f(x, y, w)
        got = f(x.to("axon"), y.to("axon"), w.to("axon")).cpu()
        torch.testing.assert_close(got, expected, msg=name)
    counters = stats()
    assert counters["launches"] >= len(checks), counters
    assert counters["lowered"] >= len(checks), counters


def test_by_default_a_call_shape_compiles_at_its_second_call():
    torch_axon._C._set_eager_compile_after(2)
    a = torch.randn(3, 13, device="axon")
    (a * a).cpu()
    assert stats()["launches"] == 0 and stats()["deferred"] == 1, stats()
    (a * a).cpu()
    assert stats()["launches"] == 1 and stats()["lowered"] == 1, stats()
    for length in range(1, 30):  # a growing shape, each seen once: nothing compiles
        cache = torch.randn(length, 8, device="axon")
        torch.testing.assert_close((cache * cache).cpu(), cache.cpu() * cache.cpu())
    assert stats()["lowered"] == 1 and stats()["deferred"] == 30, stats()
    with pytest.raises(RuntimeError, match="at least 1"):
        torch_axon._C._set_eager_compile_after(0)


def test_a_call_shape_is_lowered_once_then_launched_without_python():
    a = torch.randn(5, 7, device="axon")
    (a + a).cpu()
    lowered = stats()["lowered"]
    launches = stats()["launches"]
    for _ in range(20):
        b = a + a
    torch.testing.assert_close(b.cpu(), (a.cpu() * 2))
    assert stats()["lowered"] == lowered
    assert stats()["launches"] == launches + 20


def test_in_place_operators_write_self_and_nothing_else():
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    on_axon = base.to("axon")
    rows = on_axon[1:3]  # contiguous, at an offset into the storage
    rows.mul_(2).add_(torch.ones(2, 6, device="axon"))
    expected = base.clone()
    expected[1:3].mul_(2).add_(1)
    torch.testing.assert_close(on_axon.cpu(), expected)
    assert stats()["launches"] >= 2


def test_in_place_operands_sharing_self_keep_the_cpu_overlap_rules():
    a = torch.arange(10, dtype=torch.float32)
    on_axon = a.to("axon")
    with pytest.raises(RuntimeError, match="single memory location"):
        on_axon[1:].add_(on_axon[:-1])
    on_axon.add_(on_axon)
    torch.testing.assert_close(on_axon.cpu(), a * 2)


def test_floating_values_are_operands_of_one_executable():
    a = torch.randn(16)
    x = a.to("axon")
    for step in range(20):
        value = 1.0 + (step + 1) / 7  # an optimizer's step size: new every step
        torch.testing.assert_close((x * value).cpu(), a * value)
        torch.testing.assert_close(torch.addcdiv(x, x, x.abs() + 1, value=-value).cpu(),
                                   torch.addcdiv(a, a, a.abs() + 1, value=-value))
    counters = stats()
    assert counters["lowered"] <= 4 and counters["launches"] >= 40, counters


def test_special_values_keep_programs_of_their_own():
    matrix = torch.full((3, 3), float("nan"))
    ones = torch.ones(3, 3)
    on_axon = matrix.to("axon")
    for beta in (0.0, 0.5):  # beta == 0 ignores the input (NaN here); a shared program would not
        torch.testing.assert_close(torch.addmm(on_axon, ones.to("axon"), ones.to("axon"), beta=beta).cpu(),
                                   torch.addmm(matrix, ones, ones, beta=beta), equal_nan=True)
    a = torch.randn(8)
    for value in (0.0, 1.0, -1.0, 2.5, float("inf")):
        torch.testing.assert_close((a.to("axon") * value).cpu(), a * value, equal_nan=True)


def test_values_a_program_cannot_take_are_bounded_per_call_shape():
    a = torch.randn(16)
    x = a.to("axon")
    for step in range(20):
        slope = 0.01 * (step + 1)  # leaky_relu's slope is a Scalar argument: a constant of its program
        torch.testing.assert_close(torch.nn.functional.leaky_relu(x, slope).cpu(),
                                   torch.nn.functional.leaky_relu(a, slope))
    counters = stats()
    assert counters["lowered"] <= 8 and counters["value_limited"] >= 12, counters


def test_transposed_tensors_bind_their_memory_in_its_order():
    a, b = torch.randn(6, 8), torch.randn(8, 5)
    x, y = a.to("axon"), b.to("axon")
    product = x.t().t() @ y.t().contiguous().t()
    torch.testing.assert_close(product.cpu(), a @ b)
    image = torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)
    doubled = image.to("axon") * 2  # a channels-last result, as on the CPU
    assert doubled.stride() == (image * 2).stride()
    torch.testing.assert_close(doubled.cpu(), image * 2)
    assert stats()["launches"] >= 2 and stats()["not_eligible"] == 0, stats()


def test_out_arguments_receive_the_results():
    a, b = torch.randn(6, 8), torch.randn(6, 8)
    x, y = a.to("axon"), b.to("axon")
    out = torch.empty(6, 8, device="axon")
    torch.mul(x, y, out=out)
    torch.testing.assert_close(out.cpu(), a * b)
    resized = torch.empty(0, device="axon")  # resized by the call, as on the CPU
    torch.add(x, 2.5, out=resized)
    torch.testing.assert_close(resized.cpu(), a + 2.5)
    assert stats()["launches"] == 2, stats()
    torch.mul(x, y, out=x)  # out is exactly an input of an elementwise op: read before written
    torch.testing.assert_close(x.cpu(), a * b)
    assert stats()["launches"] == 3, stats()
    with pytest.raises(RuntimeError, match="single memory location"):
        torch.add(x[1:], 1, out=x[:-1])
    with pytest.raises(RuntimeError, match="unsupported operation"):
        torch.cat([x], out=x)


def test_gapped_views_and_generators_run_as_host_kernels():
    a = torch.randn(6, 8)
    on_axon = a.to("axon")
    torch.testing.assert_close((on_axon[:, ::2] * 3).cpu(), a[:, ::2] * 3)
    torch.axon.manual_seed(3)
    dropped = torch.nn.functional.dropout(on_axon, 0.5).cpu()
    assert stats()["not_eligible"] >= 1 and stats()["launches"] == 0, stats()
    torch.axon.set_eager_kernels("host")
    torch.axon.manual_seed(3)
    torch.testing.assert_close(torch.nn.functional.dropout(on_axon, 0.5).cpu(), dropped)


def test_operators_without_a_lowering_are_declined_once_and_still_correct():
    from torch_axon.compile import eager_kernels

    a = torch.rand(9, 4) + 0.5
    for _ in range(3):
        torch.testing.assert_close(torch.special.i0e(a.to("axon")).cpu(), torch.special.i0e(a))
    counters = stats()
    assert counters["declined"] >= 1 and counters["launches"] == 0, counters
    assert "aten::special_i0e" in eager_kernels.report()


def test_errors_are_raised_at_the_call():
    a, b = torch.randn(3, 4, device="axon"), torch.randn(5, 4, device="axon")
    with pytest.raises(RuntimeError, match="size of tensor a"):
        a + b
    with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied"):
        a @ b


_INDEXING = {
    "embedding": lambda w, i: torch.nn.functional.embedding(i, w),
    "index_select": lambda w, i: w.index_select(0, i),
    "index_select_dim1": lambda w, i: w.t().contiguous().index_select(1, i),
    "gather": lambda w, i: torch.gather(w, 0, i.view(3, 1).expand(3, 4).contiguous()),
    "take": lambda w, i: torch.take(w, i),
    "index": lambda w, i: w[i],
}


@pytest.mark.parametrize("name", list(_INDEXING))
def test_indexing_runs_compiled_and_a_bad_index_raises_the_cpus_error_at_the_next_synchronization(name):
    # The program checks its indices and the host reads that table in stream order (csrc/core/stream_checks.h),
    # so indexing runs on the device too: on the PJRT driver, embedding lookups had to stage through the host.
    function = _INDEXING[name]
    weight = torch.randn(10, 4)
    good, bad = torch.tensor([1, 9, 0]), torch.tensor([1, 99, 0])
    torch.testing.assert_close(function(weight.to("axon"), good.to("axon")).cpu(), function(weight, good))
    assert stats()["launches"] == 1, stats()
    with pytest.raises((IndexError, RuntimeError)) as on_the_cpu:
        function(weight, bad)
    function(weight.to("axon"), bad.to("axon"))  # the same call shape: the same program
    with pytest.raises(on_the_cpu.type) as on_axon:
        torch.axon.synchronize()
    assert str(on_the_cpu.value).splitlines()[0] in str(on_axon.value), (str(on_the_cpu.value), str(on_axon.value))
    assert stats()["launches"] == 2, stats()


def test_in_place_indexing_with_a_bad_index_stays_a_host_kernel():
    # Compiled, its in-range writes would land before the error; the CPU kernel's own checks decide instead.
    from torch_axon.compile import eager_kernels

    target = torch.zeros(5, device="axon")
    target.index_add_(0, torch.tensor([0, 4], device="axon"), torch.ones(2, device="axon"))
    torch.testing.assert_close(target.cpu(), torch.tensor([1.0, 0, 0, 0, 1]))
    assert "cannot report in stream order" in str(eager_kernels.declined["aten::index_add_"]), eager_kernels.report()


def test_indexing_into_an_out_tensor_stays_a_host_kernel():
    # out= is the caller's tensor: compiled, it would hold the in-range rows when the error comes.
    from torch_axon.compile import eager_kernels

    weight, out = torch.randn(10, 4, device="axon"), torch.zeros(2, 4, device="axon")
    torch.index_select(weight, 0, torch.tensor([1, 3], device="axon"), out=out)
    torch.testing.assert_close(out.cpu(), weight.cpu()[[1, 3]])
    assert "cannot report in stream order" in str(eager_kernels.declined["aten::index_select"]), eager_kernels.report()


def test_a_failing_lowerer_warns_and_leaves_the_call_to_host_kernels(monkeypatch):
    from torch_axon.compile import eager_kernels

    def broken(*args):
        raise KeyError("lowering bug")

    monkeypatch.setattr(eager_kernels, "lower", broken)
    a = torch.randn(3, 11)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = (a.to("axon") - 0.25).cpu()
    torch.testing.assert_close(result, a - 0.25)
    assert any("lowering bug" in str(w.message) for w in caught)


def _losses(model, device, steps=4):
    generator = torch.Generator().manual_seed(1)
    data = torch.randn(32, 12, generator=generator).to(device)
    target = torch.randint(0, 3, (32,), generator=generator).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def test_training_matches_the_cpu():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(12, 24), torch.nn.GELU(), torch.nn.LayerNorm(24),
                                torch.nn.Linear(24, 3))
    on_axon = copy.deepcopy(model).to("axon")
    torch.testing.assert_close(_losses(on_axon, "axon"), _losses(model, "cpu"), atol=1e-5, rtol=1e-5)
    assert stats()["launches"] > 20


def test_the_profiler_names_compiled_kernels():
    a = torch.randn(8, 8, device="axon")
    (a - a).cpu()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                            torch.profiler.ProfilerActivity.PrivateUse1]) as profile:
        (a - a).cpu()
    names = {event.name for event in profile.events()}
    assert "compiled_kernel<aten::sub>" in names, sorted(names)


def test_on_the_pjrt_driver_auto_means_compiled():
    result = run_python("""
        import torch, torch_axon
        print("mode", torch.axon.eager_kernels())
        a, b = torch.randn(6, 7), torch.randn(7, 5)
        x, y = a.to("axon"), b.to("axon")
        print("matmul", torch.allclose((x @ y).cpu(), a @ b, atol=1e-5))
        z = x.clone(); z.mul_(3).sub_(1)
        print("in_place", torch.allclose(z.cpu(), a * 3 - 1))
        print("strided", torch.equal((x.t() * 2).cpu(), a.t() * 2))
        counters = torch.axon.compiled_kernel_stats()
        print("launches", counters["launches"] >= 3)
    """, {"AXON_DRIVER": "pjrt", "AXON_EAGER_KERNELS": "", "AXON_EAGER_COMPILE_AFTER": "1"}, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = dict(line.split() for line in result.stdout.strip().splitlines())
    assert lines == {"mode": "auto", "matmul": "True", "in_place": "True", "strided": "True",
                     "launches": "True"}, result.stdout


def test_half_precision_and_raising_operators_stay_host_kernels():
    x = torch.randn(1000, dtype=torch.bfloat16)
    torch.testing.assert_close((x.to("axon") * 0.1).cpu(), x * 0.1, rtol=0, atol=0)
    numerators, zeros = torch.tensor([5, 7], device="axon"), torch.tensor([0, 2], device="axon")
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        (numerators // zeros).cpu()
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        torch.nn.functional.binary_cross_entropy(torch.tensor([1.5, 0.5], device="axon"),
                                                 torch.tensor([1.0, 0.0], device="axon")).cpu()
    assert stats()["launches"] == 0, stats()


def test_in_place_overloads_lower_the_twin_with_their_arguments():
    from torch_axon.compile import eager_kernels

    a = torch.rand(10) + 0.5
    on_axon = a.to("axon")
    for exponent in (1.5, 2.5, 3.5):
        on_axon.pow_(exponent)
        a.pow_(exponent)
    torch.testing.assert_close(on_axon.cpu(), a)
    assert "tracing" not in str(eager_kernels.declined.get("aten::pow_", "")), eager_kernels.report()
