"""Axon's rewrites of Inductor's C++ kernels (torch_axon/inductor/kernel_source_rewrites.py, philox_lanes.h,
mask_stores.h): random draws and bool masks a vector at a time, with the values of the code they replace."""

from __future__ import annotations

import pathlib
import subprocess

import pytest
import torch
from torch._inductor.utils import run_and_get_code
from torch.nn import functional as F

import torch_axon.inductor.scheduling as scheduling
from torch_axon.inductor.kernel_source_rewrites import rewrite_kernel_source

INDUCTOR_FOLDER = pathlib.Path(scheduling.__file__).parent
CHECK_SOURCE = pathlib.Path(__file__).with_name("philox_lanes_check.cpp")


pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def _draws(x):
    # Sizes with partial vectors, a transposed view, dropout and bernoulli (uniform draws compared to p).
    return F.dropout(x, 0.3, training=True), torch.rand_like(x), torch.rand_like(x[:, ::2].t()), torch.bernoulli(
        torch.full_like(x, 0.25))


def _compile_with_and_without_rewrites(monkeypatch, function, *inputs, seed=11):
    """The compiled function's results and code with axon's rewrites, then with Inductor's code as generated."""
    # Both compiles generate their code: a cached graph would bring back the first one's.
    with torch._inductor.config.patch(force_disable_caches=True):
        torch.manual_seed(seed)
        rewritten, codes = run_and_get_code(torch.compile(function), *inputs)
        torch._dynamo.reset()
        with monkeypatch.context() as patch:
            patch.setattr(scheduling, "rewrite_kernel_source", lambda code: code)
            torch.manual_seed(seed)
            generated, _ = run_and_get_code(torch.compile(function), *inputs)
    return rewritten, generated, "\n".join(codes)


def test_dropout_and_rand_draw_a_vector_at_a_time_with_the_same_values(monkeypatch):
    x = torch.randn(3, 1007, device="axon")
    vectorized, per_lane, source = _compile_with_and_without_rewrites(monkeypatch, _draws, x)
    assert "axon_uniform_rand_lanes<" in source
    assert "result[offset_idx] = normalized_rand_cpu" not in source
    for got, expected in zip(vectorized, per_lane):
        assert _same_bits(got, expected)
    dropped = (vectorized[0] == 0).float().mean().item()
    assert 0.25 < dropped < 0.35


def _masks(x, condition, y):
    # Stores of float masks into bool results (a comparison, a conversion that meets NaN and -0.0, dropout's
    # mask kept for backward), and loads of bool tensors as float masks (where, a product with a bool tensor).
    return x > 0.5, x.to(torch.bool), torch.where(condition, x, y), condition * y, (condition & (x < 0)).float()


def _same_bits(a, b):
    a, b = a.cpu(), b.cpu()
    if a.dtype == torch.float32:
        a, b = a.view(torch.int32), b.view(torch.int32)
    return a.dtype == b.dtype and torch.equal(a, b)


def test_bool_masks_are_stored_and_loaded_a_vector_at_a_time_with_the_same_bytes(monkeypatch):
    x = torch.randn(5, 1003)
    x[0, :40] = torch.tensor([float("nan"), -0.0, 0.0, float("inf"), -float("inf"), 1e-45, -1e-45, 1.0] * 5)
    condition = torch.rand(5, 1003) > 0.5
    inputs = [t.to("axon") for t in (x, condition, torch.randn(5, 1003))]
    vectorized, generated, source = _compile_with_and_without_rewrites(monkeypatch, _masks, *inputs)
    assert "axon_store_bools(" in source and "axon_load_float_mask(" in source
    cpu = _masks(x, condition, inputs[2].cpu())
    for got, expected, eager in zip(vectorized, generated, cpu):
        assert _same_bits(got, expected)
        assert _same_bits(got, eager)


def test_dropouts_backward_reads_the_mask_its_forward_stored():
    x = torch.randn(7, 999, device="axon", requires_grad=True)
    compiled = torch.compile(lambda t: F.dropout(t, 0.4, training=True))

    def step():
        y = compiled(x)
        y.sum().backward()
        return y

    with torch._inductor.config.patch(force_disable_caches=True):
        y, codes = run_and_get_code(step)
    source = "\n".join(codes)
    assert "axon_store_bools(" in source and "axon_load_float_mask(" in source
    kept = y.detach().cpu() != 0
    assert 0.55 < kept.float().mean().item() < 0.65
    torch.testing.assert_close(x.grad.cpu(), kept.float() / 0.6)


def test_code_without_those_lines_is_left_as_it_is():
    code = ("#include <torch/csrc/inductor/cpp_prefix.h>\n"
            "void kernel(bool* out_ptr0) { auto tmp = normalized_rand_cpu(seed, offset); out_ptr0[0] = tmp > 0; }\n")
    assert rewrite_kernel_source(code) == code


def _host_runs(flags: list[str]) -> bool:
    cpu_flags = pathlib.Path("/proc/cpuinfo").read_text().split()
    return all(flag.removeprefix("-m") in cpu_flags for flag in flags)


@pytest.mark.parametrize("flags", [["-mavx512f", "-mavx512dq", "-mavx512bw", "-mavx512vl"], ["-mavx2"], []],
                         ids=["avx512", "avx2", "scalar"])
def test_lanes_equal_pytorchs_philox_on_each_instruction_set(flags, tmp_path):
    if not _host_runs(flags):
        pytest.skip(f"this host cannot run {' '.join(flags)}")
    include = pathlib.Path(torch.__file__).parent / "include"
    program = tmp_path / "check"
    subprocess.run(["g++", "-std=c++17", "-O2", *flags, f"-I{include}", f"-I{INDUCTOR_FOLDER}", str(CHECK_SOURCE),
                    "-o", str(program)], check=True)
    result = subprocess.run([str(program)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout
    assert result.stdout.startswith("0 of 192000 differ")
