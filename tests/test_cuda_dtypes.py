"""Dtypes CUDA accepts and the CPU refuses run on axon, with CUDA's results.

Accelerator code is written against CUDA (transformers calls histc on integer ids on every device but the CPU,
half-precision models call avg_pool3d or multi_margin_loss in float16). For every OpInfo whose CUDA dtypes
exceed its CPU dtypes, axon runs those dtypes, computing in float32 as CUDA does ("opmath") and giving results
in the dtypes CUDA gives. Known exceptions are listed in NOT_COVERED with the reason.
"""

import warnings

import pytest
import torch
from torch.testing._internal.common_methods_invocations import op_db

NOT_COVERED = {
    # CUDA-only kernels (flash / memory-efficient attention): scaled_dot_product_attention's math path runs instead.
    "torch.ops.aten._flash_attention_forward": "CUDA-only kernel",
    "torch.ops.aten._efficient_attention_forward": "CUDA-only kernel",
}
# PyTorch's composite fft code refuses float16 on every device but CUDA before reaching a kernel.
FFT_HALF = "PyTorch's fft front end accepts float16 only on CUDA"


def _cases():
    for op in op_db:
        if op.name in NOT_COVERED:
            continue
        for dtype in sorted(set(op.supported_dtypes("cuda")) - set(op.supported_dtypes("cpu")), key=str):
            if op.name.startswith("fft.") and dtype == torch.float16:
                continue
            yield pytest.param(op, dtype, id=f"{op.name}-{str(dtype).split('.')[-1]}")


WIDE = {torch.float16: torch.float32, torch.bfloat16: torch.float32, torch.complex32: torch.complex64,
        torch.bool: torch.uint8}


def _widened(value):
    # The same values in the dtype CUDA computes in, still on axon (whose float32 kernels the OpInfo harness checks
    # against the CPU), so random operators draw from the same generator.
    if isinstance(value, torch.Tensor):
        return value.detach().to(WIDE.get(value.dtype, value.dtype))
    if isinstance(value, (list, tuple)):
        return type(value)(_widened(v) for v in value)
    return value


def _numpy(value):
    return _widened(value).cpu().numpy() if isinstance(value, torch.Tensor) else value


def _reference(op, sample, dtype):
    """What CUDA computes for `sample`, from something other than the code under test."""
    if op.name in ("nansum", "nanmean"):  # no complex kernel anywhere but CUDA: NumPy's
        kwargs = {k: v for k, v in sample.kwargs.items() if k != "dtype"}
        return torch.as_tensor(op.ref(_numpy(sample.input), *sample.args, **kwargs))
    if op.name == "histc":  # integers counted on exact float64 points give CUDA's integer bins
        return torch.histc(sample.input.cpu().double(), *sample.args, **sample.kwargs).to(dtype)
    torch.manual_seed(0)
    return op(_widened(sample.input), *_widened(sample.args), **_widened(sample.kwargs))


@pytest.mark.parametrize("op, dtype", list(_cases()))
def test_cuda_dtypes_run_and_match_a_float32_computation(op, dtype):
    checked = 0
    for sample in list(op.sample_inputs("axon", dtype))[:6]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.manual_seed(0)
            result = op(sample.input, *sample.args, **sample.kwargs)
            reference = _reference(op, sample, dtype)
        results = result if isinstance(result, (tuple, list)) else (result,)
        references = reference if isinstance(reference, (tuple, list)) else (reference,)
        for got, expected in zip(results, references):
            if not isinstance(got, torch.Tensor):
                continue
            assert got.device.type == "axon"
            expected = torch.as_tensor(expected).cpu()
            if got.dtype in WIDE and expected.dtype == WIDE[got.dtype]:
                expected = expected.to(got.dtype)  # rounded (and overflowing) as the narrow result is
            expected = expected.to(WIDE.get(expected.dtype, expected.dtype))
            atol = 2e-2
            if dtype == torch.complex32 and expected.numel():
                # PyTorch splits complex convolutions into three real ones (a Gauss product), whose subtraction
                # cancels in half precision: the error scales with the largest output, not with each element.
                atol = max(atol, 2e-2 * expected.abs().nan_to_num(posinf=0, neginf=0).max().item())
            torch.testing.assert_close(got.cpu().to(expected.dtype), expected, atol=atol, rtol=2e-2,
                                       equal_nan=True, check_dtype=False)
            checked += 1
    assert checked > 0


def test_narrow_out_and_in_place_variants_write_their_arguments():
    x = torch.randn(5, dtype=torch.complex64, device="axon").to(torch.complex32)
    out = torch.empty(0, dtype=torch.complex32, device="axon")
    result = torch.exp(x, out=out)
    assert result is out and out.shape == (5,) and out.dtype == torch.complex32
    expected = torch.exp(x.cpu().to(torch.complex64))
    torch.testing.assert_close(out.cpu().to(torch.complex64), expected, atol=1e-2, rtol=1e-2)
    y = x.clone()
    assert y.exp_() is y
    torch.testing.assert_close(y.cpu().to(torch.complex64), expected, atol=1e-2, rtol=1e-2)


def test_half_avg_pool3d_trains():
    # Forward and backward in float16, as on CUDA (the CPU has neither).
    pool = torch.nn.AvgPool3d(2)
    x = torch.randn(1, 2, 4, 4, 4, device="axon", dtype=torch.float16, requires_grad=True)
    pool(x).sum().backward()
    assert x.grad.dtype == torch.float16
    torch.testing.assert_close(x.grad.cpu().float(), torch.full((1, 2, 4, 4, 4), 0.125))


def test_complex_nansum_counts_nan_as_zero():
    x = torch.tensor([1 + 1j, complex(float("nan"), 0), complex(2, float("nan")), 3 - 1j], device="axon")
    assert torch.nansum(x).item() == 4 + 0j
    assert torch.nanmean(x).item() == 2 + 0j
