"""Matrix products (mm, bmm, addmm, baddbmm, dot, mv, matmul: one stablehlo.dot_general each) and triangular
solves (linalg_solve_triangular, triangular_solve: one stablehlo.triangular_solve each)."""

from __future__ import annotations

import torch

from .builder import LoweringError
from .context import LoweringContext
from .registry import lowers

aten = torch.ops.aten


def dot_general(context: LoweringContext, lhs, rhs, batch: int, shape, dtype):
    """lhs [B..., M, K] x rhs [B..., K, N] with `batch` leading batch dimensions."""
    if dtype.is_complex or not (dtype.is_floating_point or dtype in (torch.int32, torch.int64)):
        if not dtype.is_complex and dtype not in (torch.int8, torch.int16, torch.uint8):
            raise LoweringError(f"matmul in {dtype}")
    lhs, rhs = context.convert(lhs, dtype), context.convert(rhs, dtype)
    batch_dims = ", ".join(str(i) for i in range(batch))
    lhs_contract = lhs.rank - 1
    rhs_contract = batch if rhs.rank > batch + 1 else batch
    attributes = (f"dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [{batch_dims}], "
                  f"rhs_batching_dimensions = [{batch_dims}], lhs_contracting_dimensions = [{lhs_contract}], "
                  f"rhs_contracting_dimensions = [{rhs_contract}]>")
    return context.op("stablehlo.dot_general", [lhs, rhs], shape, dtype, attributes)


def _scaled_by_one(context, product, shape, dtype):
    """`product` times the complex scale 1 + 0j, as the CPU's complex mm and addmm apply it (MKL's gemm scales its
    sum by alpha): an infinite part times that 0 makes NaNs, so (inf + 0j) @ (4 - 1j) is nan + nanj there, not the
    product's inf - infj (fuzz seed 693672). bmm, mv and dot give the product unscaled, as here."""
    real_dtype = dtype.to_real()
    real = context.op("stablehlo.real", [product], shape, real_dtype)
    imag = context.op("stablehlo.imag", [product], shape, real_dtype)
    zero = context.constant(0, real_dtype, shape)
    scaled_real = context.op("stablehlo.subtract", [real, context.op("stablehlo.multiply", [imag, zero], shape,
                                                                     real_dtype)], shape, real_dtype)
    scaled_imag = context.op("stablehlo.add", [context.op("stablehlo.multiply", [real, zero], shape, real_dtype),
                                               imag], shape, real_dtype)
    return context.op("stablehlo.complex", [scaled_real, scaled_imag], shape, dtype)


@lowers(aten.mm.default, aten.bmm.default, aten.dot.default, aten.mv.default)
def _mm(context, node, lhs, rhs):
    shape, dtype = context.output_type()
    batch = 1 if node.target == aten.bmm.default else 0
    product = dot_general(context, lhs, rhs, batch, shape, dtype)
    if dtype.is_complex and node.target == aten.mm.default:
        product = _scaled_by_one(context, product, shape, dtype)
    return product


@lowers(aten.addmm.default, aten.baddbmm.default, aten.addmv.default)
def _addmm(context, node, bias, lhs, rhs, *, beta=1, alpha=1):
    shape, dtype = context.output_type()
    batch = 1 if node.target == aten.baddbmm.default else 0
    product = dot_general(context, lhs, rhs, batch, shape, dtype)
    if dtype.is_complex and node.target == aten.addmm.default:
        product = _scaled_by_one(context, product, shape, dtype)
    return _scaled_sum(context, bias, product, beta, alpha, shape, dtype)


@lowers(aten.addbmm.default)
def _addbmm(context, node, bias, lhs, rhs, *, beta=1, alpha=1):
    """beta * bias + alpha * Σ_b lhs[b] @ rhs[b]: one dot_general contracting the batch and K together."""
    shape, dtype = context.output_type()
    if not dtype.is_floating_point:
        raise LoweringError(f"addbmm in {dtype}")
    lhs, rhs = context.convert(lhs, dtype), context.convert(rhs, dtype)
    product = context.op("stablehlo.dot_general", [lhs, rhs], shape, dtype,
                         "dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [], "
                         "rhs_batching_dimensions = [], lhs_contracting_dimensions = [0, 2], "
                         "rhs_contracting_dimensions = [0, 1]>")
    return _scaled_sum(context, bias, product, beta, alpha, shape, dtype)


def _scaled_sum(context, bias, product, beta, alpha, shape, dtype):
    """beta * bias + alpha * product (bias ignored when beta is 0, NaNs included, as PyTorch does)."""
    if alpha != 1:
        product = context.op("stablehlo.multiply", [product, context.constant(alpha, dtype, shape)], shape, dtype)
    if beta == 0:
        return product
    addend = context.operand(bias, dtype, shape)
    if beta != 1:
        addend = context.op("stablehlo.multiply", [addend, context.constant(beta, dtype, shape)], shape, dtype)
    return context.op("stablehlo.add", [addend, product], shape, dtype)


# ---- triangular solves ---------------------------------------------------------------------------------
def _batched(context, value, batch, matrix):
    """`value` ([..., rows, cols]) broadcast to the batch shape `batch` (PyTorch's batch broadcasting)."""
    shape = tuple(batch) + tuple(matrix)
    offset = len(shape) - value.rank
    return context.broadcast_in_dim(value, shape, list(range(offset, len(shape)))) if value.shape != shape else value


def triangular_solve(context, a, b, shape, dtype, *, lower: bool, left: bool, unit: bool, transpose: str):
    """X with op(a) X = b (left) or X op(a) = b (right); `shape` is X's, batch dimensions included, and `a`
    is broadcast to X's batch. One stablehlo.triangular_solve; XLA never reads the other triangle."""
    if dtype not in (torch.float32, torch.float64, torch.complex64, torch.complex128):
        raise LoweringError(f"triangular solve in {dtype}")  # the CPU's LAPACK kernels take no other dtype
    if 0 in shape or 0 in a.shape:
        return context.constant(0, dtype, shape)
    batch, size = shape[:-2], a.shape[-1]
    a = _batched(context, context.convert(a, dtype), batch, (size, size))
    b = _batched(context, context.convert(b, dtype), batch, shape[-2:])
    attributes = (f"left_side = {str(left).lower()}, lower = {str(lower).lower()}, "
                  f"unit_diagonal = {str(unit).lower()}, transpose_a = #stablehlo<transpose {transpose}>")
    return context.op("stablehlo.triangular_solve", [a, b], shape, dtype, attributes)


@lowers(aten.linalg_solve_triangular.default)
def _linalg_solve_triangular(context, node, a, b, *, upper, left=True, unitriangular=False):
    shape, dtype = context.output_type()
    return triangular_solve(context, a, b, shape, dtype, lower=not upper, left=left, unit=unitriangular,
                            transpose="NO_TRANSPOSE")


@lowers(aten.triangular_solve.default)
def _triangular_solve(context, node, b, a, upper=True, transpose=False, unitriangular=False):
    """The older spelling: (solution of op(a) X = b, `a` broadcast to the batch), op a plain transpose."""
    solution, coefficient = context.output
    shape, dtype = context.shape_of(solution), solution.dtype
    result = triangular_solve(context, a, b, shape, dtype, lower=not upper, left=True, unit=unitriangular,
                              transpose="TRANSPOSE" if transpose else "NO_TRANSPOSE")
    coefficient_shape = context.shape_of(coefficient)
    return [result, _batched(context, context.convert(a, dtype), coefficient_shape[:-2], coefficient_shape[-2:])]
