"""Fourier transforms: _fft_r2c, _fft_c2r, _fft_c2c as stablehlo.fft over the transformed dims.

stablehlo.fft transforms the trailing 1–3 dimensions, so the transformed dims
are moved last and back. XLA's inverse transforms (IFFT, IRFFT) already divide
by the signal size while PyTorch's private ops apply only the normalization
they are given (0: none, 1: 1/sqrt(n), 2: 1/n), so the inverse scale is undone
before PyTorch's is applied.
"""

from __future__ import annotations

import math

import torch

from .builder import LoweringError
from .context import LoweringContext, normalize_dim
from .registry import lowers

aten = torch.ops.aten

_COMPLEX = {torch.float32: torch.complex64, torch.float64: torch.complex128}


def _move_last(context: LoweringContext, x, dims):
    """x with `dims` moved last (in order) and the permutation that restores it."""
    rest = [d for d in range(x.rank) if d not in dims]
    permutation = rest + list(dims)
    inverse = sorted(range(x.rank), key=permutation.__getitem__)
    return context.transpose(x, permutation), inverse


def _fft(context, x, dims, kind, lengths, out_dtype, out_last):
    if not 1 <= len(dims) <= 3:
        raise LoweringError(f"FFT over {len(dims)} dimensions (stablehlo.fft takes 1 to 3)")
    moved, inverse = _move_last(context, x, dims)
    shape = list(moved.shape[:-1]) + [out_last]
    result = context.op("stablehlo.fft", [moved], shape, out_dtype,
                        f"fft_length = array<i64: {', '.join(str(int(n)) for n in lengths)}>, "
                        f"fft_type = #stablehlo<fft_type {kind}>")
    return context.transpose(result, inverse)


def _scale(context, value, factor):
    if factor == 1:
        return value
    return context.op("stablehlo.multiply", [value, context.constant(factor, value.dtype, value.shape)], value.shape,
                      value.dtype)


def _norm_factor(normalization: int, size: int) -> float:
    return {0: 1.0, 1: 1.0 / math.sqrt(size), 2: 1.0 / size}[int(normalization)]


def _dims(x, dim):
    dims = [normalize_dim(d, x.rank) for d in dim]
    if sorted(set(dims)) != sorted(dims):
        raise LoweringError("repeated FFT dimension")
    return dims


def _check_sizes(lengths):
    if any(int(n) == 0 for n in lengths):
        raise LoweringError("FFT of an empty signal")


@lowers(aten._fft_r2c.default)
def _fft_r2c(context, node, x, dim, normalization, onesided):
    meta = context.output_tensor()
    if x.dtype not in _COMPLEX:
        raise LoweringError(f"FFT of {x.dtype}")
    dims = _dims(x, dim)
    lengths = [x.shape[d] for d in dims]
    _check_sizes(lengths)
    if onesided:
        result = _fft(context, x, dims, "RFFT", lengths, meta.dtype, lengths[-1] // 2 + 1)
    else:
        result = _fft(context, context.convert(x, meta.dtype), dims, "FFT", lengths, meta.dtype, lengths[-1])
    return _scale(context, result, _norm_factor(normalization, math.prod(lengths)))


def _complex_input(context, node, x, dim):
    """(output metadata, normalized dims) for an FFT of a complex input."""
    if x.dtype not in (torch.complex64, torch.complex128):
        raise LoweringError(f"{node.target}: input of {x.dtype}")
    return context.output_tensor(), _dims(x, dim)


@lowers(aten._fft_c2c.default)
def _fft_c2c(context, node, x, dim, normalization, forward):
    meta, dims = _complex_input(context, node, x, dim)
    if not dims:
        return _scale(context, x, 1.0)
    lengths = [x.shape[d] for d in dims]
    _check_sizes(lengths)
    size = math.prod(lengths)
    result = _fft(context, x, dims, "FFT" if forward else "IFFT", lengths, meta.dtype, lengths[-1])
    return _scale(context, result, _norm_factor(normalization, size) * (1 if forward else size))


@lowers(aten._fft_c2r.default)
def _fft_c2r(context, node, x, dim, normalization, last_dim_size):
    meta, dims = _complex_input(context, node, x, dim)
    lengths = [x.shape[d] for d in dims[:-1]] + [int(last_dim_size)]
    _check_sizes(lengths)
    if x.shape[dims[-1]] != lengths[-1] // 2 + 1:
        raise LoweringError("c2r input is not the one-sided half of the output")
    size = math.prod(lengths)
    result = _fft(context, x, dims, "IRFFT", lengths, meta.dtype, lengths[-1])
    return _scale(context, result, _norm_factor(normalization, size) * size)


# ---- complex values as pairs of reals (what FFT results meet next) --------------
@lowers(aten.view_as_real.default)
def _view_as_real(context, node, x):
    shape, dtype = context.output_type()
    parts = [context.reshape(context.op(f"stablehlo.{part}", [x], x.shape, dtype), x.shape + (1,))
             for part in ("real", "imag")]
    return context.op("stablehlo.concatenate", parts, shape, dtype, f"dimension = {x.rank} : i64")


@lowers(aten.view_as_complex.default)
def _view_as_complex(context, node, x):
    shape, dtype = context.output_type()
    real, imag = (context.reshape(context.slice(x, [0] * (x.rank - 1) + [i], list(x.shape[:-1]) + [i + 1]), shape)
                  for i in (0, 1))
    return context.op("stablehlo.complex", [real, imag], shape, dtype)


@lowers(aten.complex.default)
def _complex(context, node, real, imag):
    shape, dtype = context.output_type()
    part = torch.float32 if dtype == torch.complex64 else torch.float64
    return context.op("stablehlo.complex", [context.operand(real, part, shape), context.operand(imag, part, shape)],
                      shape, dtype)


@lowers(aten._conj.default, aten._conj_physical.default, aten.conj_physical.default)
def _conj(context, node, x):
    if not x.dtype.is_complex:
        return x
    part = torch.float32 if x.dtype == torch.complex64 else torch.float64
    real = context.op("stablehlo.real", [x], x.shape, part)
    imag = context.op("stablehlo.negate", [context.op("stablehlo.imag", [x], x.shape, part)], x.shape, part)
    return context.op("stablehlo.complex", [real, imag], x.shape, x.dtype)
