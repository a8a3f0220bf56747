"""Convolution (N-d, strided, padded, dilated, grouped, transposed) and its backward, as stablehlo.convolution.

Layouts are PyTorch's: input [N, C, spatial...], weight [O, I/groups, kernel...]
(transposed: [I, O/groups, kernel...]). A transposed convolution is the plain
convolution of the stride-dilated input (lhs_dilation) with the spatially
reversed kernel whose in/out channels are swapped per group. The backward pass
reuses that identity for the input gradient and a batch-grouped convolution of
input with output gradient for the weight gradient. Half and bfloat16 compute
in float32, as PyTorch's CPU kernels accumulate.
"""

from __future__ import annotations

import torch

from .builder import LoweringError, i64_array
from .context import LoweringContext
from .registry import lowers

aten = torch.ops.aten


def _compute(dtype):
    if not dtype.is_floating_point:
        raise LoweringError(f"convolution in {dtype}")
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _layout(spatial: int, lhs: str, rhs: str, out: str) -> str:
    """#stablehlo.conv<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]> with the given leading two letters."""
    digits = ", ".join(str(i) for i in range(spatial))
    tail = f", {digits}" if spatial else ""
    return f"#stablehlo.conv<[{lhs}{tail}]x[{rhs}{tail}]->[{out}{tail}]>"


def convolve(context: LoweringContext, lhs, rhs, out_shape, dtype, *, strides, padding, lhs_dilation,
             rhs_dilation, feature_groups=1, batch_groups=1, layout=("b, f", "o, i", "b, f")):
    spatial = lhs.rank - 2
    for low, high in padding:
        if low < 0 or high < 0:
            raise LoweringError("convolution with negative padding")
    pad_text = ", ".join(f"[{int(lo)}, {int(hi)}]" for lo, hi in padding)
    pad_attr = f"dense<[{pad_text}]> : tensor<{spatial}x2xi64>" if spatial else "dense<> : tensor<0x2xi64>"
    attributes = (f"batch_group_count = {batch_groups} : i64, dimension_numbers = {_layout(spatial, *layout)}, "
                  f"feature_group_count = {feature_groups} : i64, lhs_dilation = {i64_array(lhs_dilation)}, "
                  f"padding = {pad_attr}, rhs_dilation = {i64_array(rhs_dilation)}, "
                  f"window_strides = {i64_array(strides)}")
    return context.op("stablehlo.convolution", [lhs, rhs], out_shape, dtype, attributes)


def _expand(values, spatial):
    values = [int(v) for v in values]
    return values * spatial if len(values) == 1 else values


def _transposed_kernel(context, weight, groups):
    """Transposed-conv weight [I, O/g, k...] → plain-conv weight [O, I/g, k...], kernel reversed."""
    in_channels, out_per_group = weight.shape[0], weight.shape[1]
    kernel = list(weight.shape[2:])
    per_group = in_channels // groups
    w = context.reshape(weight, [groups, per_group, out_per_group] + kernel)
    w = context.transpose(w, [0, 2, 1] + list(range(3, 3 + len(kernel))))
    w = context.reshape(w, [groups * out_per_group, per_group] + kernel)
    if kernel:
        w = context.op("stablehlo.reverse", [w], w.shape, w.dtype,
                       f"dimensions = {i64_array(range(2, 2 + len(kernel)))}")
    return w


def _transposed_conv(context, x, weight, out_shape, compute, stride, padding, dilation, output_padding, groups):
    """conv_transpose(x, weight [I, O/g, k...]) into `out_shape`."""
    kernel = weight.shape[2:]
    pads = []
    # output_padding is already in out_shape: the high pad follows from the output size.
    for k, s, p, d, n, o in zip(kernel, stride, padding, dilation, x.shape[2:], out_shape[2:]):
        low = d * (k - 1) - p
        high = o - ((n - 1) * s + 1) - low + d * (k - 1)  # = low + output_padding when shapes agree
        pads.append((low, high))
    w = _transposed_kernel(context, weight, groups)
    return convolve(context, x, w, out_shape, compute, strides=[1] * len(kernel), padding=pads,
                    lhs_dilation=stride, rhs_dilation=dilation, feature_groups=groups)


def _add_bias(context, result, bias, compute):
    if bias is None:
        return result
    b = context.convert(bias, compute)
    return context.op("stablehlo.add", [result, context.broadcast_in_dim(b, result.shape, [1])], result.shape,
                      compute)


@lowers(aten.convolution.default)
def _convolution(context, node, x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    out_shape, dtype = context.output_type()
    compute = _compute(dtype)
    spatial = x.rank - 2
    if spatial < 0 or weight.rank != x.rank:
        raise LoweringError("convolution input must be batched [N, C, ...]")
    stride, padding, dilation = _expand(stride, spatial), _expand(padding, spatial), _expand(dilation, spatial)
    output_padding = _expand(output_padding, spatial)
    x, weight = context.convert(x, compute), context.convert(weight, compute)
    if transposed:
        result = _transposed_conv(context, x, weight, out_shape, compute, stride, padding, dilation,
                                  output_padding, groups)
    else:
        result = convolve(context, x, weight, out_shape, compute, strides=stride,
                          padding=[(p, p) for p in padding], lhs_dilation=[1] * spatial, rhs_dilation=dilation,
                          feature_groups=groups)
    return context.convert(_add_bias(context, result, bias, compute), dtype)


def _weight_gradient(context, x, grad, weight_shape, compute, stride, padding, dilation, groups):
    """dL/dW [O, I/g, k...] = batch-grouped convolution of x (channels as batch) with grad (batch as features)."""
    kernel = weight_shape[2:]
    pads = []
    slices = list(x.shape)
    for axis, (k, s, p, d, n, o) in enumerate(zip(kernel, stride, padding, dilation, x.shape[2:], grad.shape[2:])):
        used = (o - 1) * s + d * (k - 1) + 1  # padded input positions any window reads
        high = used - n - p
        if high < 0:  # trailing input rows no window reaches: drop them instead of padding negatively
            slices[2 + axis] = n + high
            high = 0
        pads.append((p, high))
    if slices != list(x.shape):
        x = context.slice(x, [0] * x.rank, slices)
    # lhs: x with batch = channels (dim 1), features = N (dim 0); rhs: grad with in-features = N (dim 0),
    # out-features = O (dim 1); result [O, I/g, k...] has features = O and batch = I/g.
    return convolve(context, x, grad, weight_shape, compute, strides=dilation, padding=pads,
                    lhs_dilation=[1] * len(kernel), rhs_dilation=stride, batch_groups=groups,
                    layout=("f, b", "i, o", "f, b"))


@lowers(aten.convolution_backward.default)
def _convolution_backward(context, node, grad, x, weight, bias_sizes, stride, padding, dilation, transposed,
                          output_padding, groups, output_mask):
    outputs = context.output
    spatial = x.rank - 2
    if spatial < 0:
        raise LoweringError("convolution input must be batched [N, C, ...]")
    stride, padding, dilation = _expand(stride, spatial), _expand(padding, spatial), _expand(dilation, spatial)
    output_padding = _expand(output_padding, spatial)
    dtype = grad.dtype
    compute = _compute(dtype)
    g, xc, w = (context.convert(v, compute) for v in (grad, x, weight))
    results = [None, None, None]
    if output_mask[0]:
        if transposed:
            # Input of a transposed conv gets the plain convolution of grad with the same weight.
            grad_input = convolve(context, g, w, x.shape, compute, strides=stride,
                                  padding=[(p, p) for p in padding], lhs_dilation=[1] * spatial,
                                  rhs_dilation=dilation, feature_groups=groups)
        else:
            grad_input = _transposed_conv(context, g, w, x.shape, compute, stride, padding, dilation,
                                          [0] * spatial, groups)
        results[0] = context.convert(grad_input, outputs[0].dtype)
    if output_mask[1]:
        if transposed:
            # Transposed conv y = conv_T(x, W) is x = conv(y, W) read backwards: roles of x and grad swap.
            grad_weight = _weight_gradient(context, g, xc, weight.shape, compute, stride, padding, dilation,
                                           groups)
        else:
            grad_weight = _weight_gradient(context, xc, g, weight.shape, compute, stride, padding, dilation,
                                           groups)
        results[1] = context.convert(grad_weight, outputs[1].dtype)
    if output_mask[2]:
        dims = [d for d in range(grad.rank) if d != 1]
        results[2] = context.convert(context.reduce(g, 0, dims, "add"), outputs[2].dtype)
    for i, meta in enumerate(outputs):
        if results[i] is None:
            if meta is None:
                continue
            results[i] = context.constant(0, meta.dtype, context.shape_of(meta))
    return results
