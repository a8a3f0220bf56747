"""module_db: every nn module run on axon against the CPU (forward and backward).

For each ModuleInfo and dtype (float32 and float64 where supported), each
ModuleInput constructs the module on the CPU with a fixed seed, copies it to
axon, runs forward on both, compares outputs, then backpropagates the same
output gradients and compares input and parameter gradients.
"""

from __future__ import annotations

import copy
import warnings

import torch

import torch_axon

from .checks import require_native, run_check
from .comparison import assert_same, to_axon
from .results import Outcome, Result


def _tensors(value) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _tensors(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in _tensors(item)]
    return []


def _run(module: torch.nn.Module, forward_input) -> tuple[list, list]:
    """Outputs, then gradients of (inputs that require grad, parameters) for fixed output gradients."""
    outputs = module(*forward_input.args, **forward_input.kwargs)
    results = [t for t in _tensors(outputs) if t.dtype.is_floating_point]
    differentiable = [t for t in _tensors(forward_input.args) + _tensors(forward_input.kwargs) if t.requires_grad]
    differentiable += [p for p in module.parameters() if p.requires_grad]
    with_grad = [t for t in results if t.requires_grad]
    grads = []
    if with_grad and differentiable:
        generator = torch.Generator().manual_seed(0)
        grad_outputs = [torch.randn(t.shape, dtype=t.dtype, generator=generator).to(t.device) for t in with_grad]
        grads = list(torch.autograd.grad(with_grad, differentiable, grad_outputs, allow_unused=True))
    return list(_tensors(outputs)), grads


def run_module(module_info, *, dtypes=(torch.float32, torch.float64), max_inputs: int | None = None) -> list[Result]:
    results = []
    name = f"module:{module_info.name}"
    for dtype in dtypes:
        if dtype not in module_info.supported_dtypes("cpu"):
            continue
        label = str(dtype).replace("torch.", "")
        torch_axon.reset_fallback_ops()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                inputs = module_info.module_inputs_func(module_info, device="cpu", dtype=dtype,
                                                        requires_grad=True, training=True)
        except Exception as error:
            results.append(Result(name, "module", label, Outcome.SKIPPED,
                                  f"ModuleInfo cannot make inputs on CPU: {type(error).__name__}"))
            continue
        def check_inputs() -> None:
            for module_input in inputs[:max_inputs]:
                if module_input.forward_input is None:
                    continue
                args, kwargs = module_input.constructor_input.args, module_input.constructor_input.kwargs
                torch.manual_seed(0)
                cpu_module = module_info.module_cls(*args, **kwargs).to(dtype)
                if module_info.is_lazy:  # materialize parameters before copying them to axon
                    with torch.no_grad():
                        cpu_module(*module_input.forward_input.args, **module_input.forward_input.kwargs)
                axon_module = copy.deepcopy(cpu_module).to("axon")
                try:
                    expected = _run(cpu_module, module_input.forward_input)
                except Exception:
                    continue  # the CPU cannot run this input either
                moved = copy.copy(module_input.forward_input)
                storages = {}  # shared: a tensor given both as an argument and a keyword stays one tensor
                moved.args = to_axon(module_input.forward_input.args, storages)
                moved.kwargs = to_axon(module_input.forward_input.kwargs, storages)
                actual = _run(axon_module, moved)
                torch.axon.synchronize()
                assert_same(actual[0], expected[0], check_strides=False, where="module output")
                assert_same(actual[1], expected[1], check_strides=False, where="module gradient")
            require_native()

        results.append(run_check(name, "module", label, check_inputs))
    return results
