"""The CPU's fused attention kernels, forward and backward, as core-ATen math the lowering table lowers.

`scaled_dot_product_attention` on axon runs the CPU's flash kernels: the forward
(`_scaled_dot_product_flash_attention_for_cpu`) returns the output and each query row's logsumexp, and the backward
(`..._backward`) rebuilds the attention weights from that logsumexp. PyTorch's own decomposition of the forward
returns the attention weights (B, H, L, S) where the kernel returns its logsumexp (B, H, L), and there is none of the
backward. A training graph that used it handed the weights to the eager backward as the logsumexp, and every
gradient of q, k and v came out wrong. Inductor sidesteps this by not decomposing the forward at all. Here both are
decomposed, with the kernel's logsumexp, so the backward is compiled too instead of running eagerly between
partitions.

Reduced-precision inputs are computed in float32, as the CPU kernels accumulate them, with a float32 logsumexp.
Results have the CPU kernels' memory layouts (the output laid out as the query is, each gradient as (B, L, H, E)
transposed). Dropout is left to the kernels (the decomposition declines it).
"""

from __future__ import annotations

import math

import torch
import torch._prims_common

aten = torch.ops.aten


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _repeat_heads(tensor: torch.Tensor, heads: int) -> torch.Tensor:
    """Grouped-query attention: each key/value head serves heads // its heads consecutive query heads."""
    batch, own, length, size = tensor.shape
    if own == heads:
        return tensor
    return tensor.unsqueeze(2).expand(batch, own, heads // own, length, size).reshape(batch, heads, length, size)


def _sum_groups(gradient: torch.Tensor, heads: int) -> torch.Tensor:
    """The gradient of _repeat_heads: each key/value head's share summed over the query heads it served."""
    batch, expanded, length, size = gradient.shape
    if expanded == heads:
        return gradient
    return gradient.reshape(batch, heads, expanded // heads, length, size).sum(2)


def _scores(query, key, is_causal, attn_mask, scale):
    """Scaled, masked q kᵀ in the compute dtype, and the scale used."""
    compute = _compute_dtype(query.dtype)
    scale = scale if scale is not None else 1.0 / math.sqrt(query.size(-1))
    scores = torch.matmul(query.to(compute), key.to(compute).transpose(-2, -1)) * scale
    if is_causal:  # top-left aligned, as the CPU kernel: query row i sees keys 0..i
        keep = torch.ones(scores.shape[-2:], dtype=torch.bool, device=query.device).tril()
        scores = scores.masked_fill(keep.logical_not(), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            scores = scores + attn_mask.to(compute)
    return scores, scale


def _in_memory_order(tensor: torch.Tensor, order) -> torch.Tensor:
    """`tensor` laid out with its dimensions `order` outermost first in memory."""
    return tensor.permute(order).contiguous().permute([order.index(dim) for dim in range(tensor.dim())])


def _cpu_layout(tensor: torch.Tensor) -> torch.Tensor:
    """(B, H, L, E) laid out in memory as (B, L, H, E), as the CPU backward kernel allocates its gradients."""
    return _in_memory_order(tensor, [0, 2, 1, 3])


def _laid_out_like(tensor: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """`tensor` in `reference`'s dimension order in memory, as the forward kernel allocates its output (empty_like)."""
    if not torch._prims_common.is_non_overlapping_and_dense_or_false(reference):
        return tensor.contiguous()
    return _in_memory_order(tensor, sorted(range(reference.dim()), key=lambda dim: -reference.stride(dim)))


def _supported(query, key, value, dropout_p) -> bool:
    return (dropout_p == 0.0 and query.is_floating_point() and query.dim() == key.dim() == value.dim() == 4
            and key.size(1) > 0 and query.size(1) % key.size(1) == 0 and key.size(1) == value.size(1))


def flash_attention_forward(query, key, value, dropout_p=0.0, is_causal=False, *, attn_mask=None, scale=None):
    if not _supported(query, key, value, dropout_p):
        return NotImplemented
    heads = query.size(1)
    scores, _ = _scores(query, _repeat_heads(key, heads), is_causal, attn_mask, scale)
    row_max = scores.amax(-1, keepdim=True)
    row_max = torch.where(torch.isinf(row_max), torch.zeros_like(row_max), row_max)  # a fully masked row
    exponent = torch.exp(scores - row_max)
    total = exponent.sum(-1, keepdim=True)
    # A fully masked row: the kernel's logsumexp is 0 there (its output and gradients are 0).
    logsumexp = torch.where(total == 0, torch.zeros_like(total), torch.log(total) + row_max).squeeze(-1)
    weights = torch.where(total == 0, torch.zeros_like(exponent), exponent / total)
    output = torch.matmul(weights, _repeat_heads(value, heads).to(weights.dtype))
    return _laid_out_like(output.to(query.dtype), query), logsumexp


def flash_attention_backward(grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, *, attn_mask=None,
                             scale=None):
    if not _supported(query, key, value, dropout_p):
        return NotImplemented
    heads, kv_heads = query.size(1), key.size(1)
    compute = _compute_dtype(query.dtype)
    key_all, value_all = _repeat_heads(key, heads).to(compute), _repeat_heads(value, heads).to(compute)
    scores, scale = _scores(query, key_all, is_causal, attn_mask, scale)
    # A fully masked row's scores are all -inf and its logsumexp 0, so its weights are 0.
    weights = torch.exp(scores - logsumexp.to(compute).unsqueeze(-1))
    grad = grad_out.to(compute)
    grad_value = torch.matmul(weights.transpose(-2, -1), grad)
    grad_weights = torch.matmul(grad, value_all.transpose(-2, -1))
    row_dot = (grad * out.to(compute)).sum(-1, keepdim=True)
    grad_scores = weights * (grad_weights - row_dot) * scale
    grad_query = torch.matmul(grad_scores, key_all)
    grad_key = torch.matmul(grad_scores.transpose(-2, -1), query.to(compute))
    return (_cpu_layout(grad_query.to(query.dtype)), _cpu_layout(_sum_groups(grad_key, kv_heads).to(key.dtype)),
            _cpu_layout(_sum_groups(grad_value, kv_heads).to(value.dtype)))


DECOMPOSITIONS = {
    aten._scaled_dot_product_flash_attention_for_cpu.default: flash_attention_forward,
    aten._scaled_dot_product_flash_attention_for_cpu_backward.default: flash_attention_backward,
}
