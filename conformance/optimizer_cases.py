"""optim_db: every optimizer configuration stepped on axon against the CPU.

For each OptimizerInfo and each of its configurations (including foreach and
fused variants where the optimizer supports them), a small model's parameters
take five steps with the same gradients on the CPU and on axon; parameters
must agree afterwards.
"""

from __future__ import annotations

import torch

import torch_axon

from .checks import require_native, run_check
from .comparison import assert_same
from .results import Result

STEPS = 5


def _train(optimizer_cls, kwargs: dict, device: str, initial: list[torch.Tensor], grads: list) -> list[torch.Tensor]:
    params = [p.clone().to(device).requires_grad_() for p in initial]
    optimizer = optimizer_cls(params, **kwargs)
    for step_grads in grads:
        for param, grad in zip(params, step_grads):
            param.grad = grad.to(device)
        optimizer.step()
    return [p.detach() for p in params]


def _variants(optim_info) -> list[dict]:
    """Per configuration: the plain for-loop implementation, then foreach and fused if supported."""
    implementations = [{}]
    if "foreach" in optim_info.supported_impls:
        implementations.append({"foreach": True})
    if "fused" in optim_info.supported_impls:
        implementations.append({"fused": True})
    return implementations


def run_optimizer(optim_info) -> list[Result]:
    results = []
    name = f"optim:{optim_info.name}"
    generator = torch.Generator().manual_seed(0)
    initial = [torch.randn(4, 3, generator=generator), torch.randn(3, generator=generator)]
    grads = [[torch.randn(p.shape, generator=generator) for p in initial] for _ in range(STEPS)]
    if optim_info.only_supports_sparse_grads:
        # Sparse gradients (SparseAdam): rows left out, as an embedding's gradient leaves unused rows out.
        grads = [[(g * (torch.rand(g.shape[0], generator=generator) < 0.6).unsqueeze(-1).to(g.dtype)
                   if g.dim() > 1 else g).to_sparse() for g in step] for step in grads]
    for configuration in optim_info.optim_inputs_func(device="cpu"):
        base = {k: v for k, v in configuration.kwargs.items() if k not in ("foreach", "fused", "capturable")}
        for implementation in _variants(optim_info):
            kwargs = {**base, **implementation}
            label = f"{configuration.desc or 'default'}{' ' + next(iter(implementation)) if implementation else ''}"
            torch_axon.reset_fallback_ops()
            try:
                expected = _train(optim_info.optim_cls, kwargs, "cpu", initial, grads)
            except Exception:
                continue  # the CPU refuses this configuration too

            def check_axon(kwargs=kwargs, expected=expected) -> None:
                actual = _train(optim_info.optim_cls, kwargs, "axon", initial, grads)
                torch.axon.synchronize()
                assert_same(actual, expected, check_strides=False, where="parameters")
                require_native()

            results.append(run_check(name, "optimizer", label, check_axon))
    return results
