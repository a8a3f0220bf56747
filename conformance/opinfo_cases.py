"""Runs one OpInfo's checks on axon against the CPU."""

from __future__ import annotations

import functools
import itertools
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.autograd import forward_ad

import torch_axon

from .checks import require_native, run_check
from .comparison import Mismatch, assert_same, to_axon
from .results import Outcome, Result

# Operators whose values depend on a random stream: axon's Philox stream is
# not the CPU's mt19937 stream, so only dtype/shape/device are compared.
RANDOM_OPERATORS = {
    "bernoulli", "normal", "normal_", "multinomial", "uniform", "rand_like", "randn_like", "randint_like",
    "randint", "randn", "rand", "randperm", "nn.functional.dropout", "nn.functional.dropout2d",
    "nn.functional.dropout3d", "nn.functional.alpha_dropout", "nn.functional.feature_alpha_dropout",
    "nn.functional.rrelu", "cauchy", "exponential", "geometric", "log_normal", "nn.functional.fractional_max_pool2d",
    "nn.functional.fractional_max_pool3d", "empty", "empty_like", "empty_strided", "new_empty",
    "new_empty_strided", "empty_permuted", "nn.functional.multi_head_attention_forward",
    "nn.functional.scaled_dot_product_attention", "torch._scaled_mm",
}

# Arguments a sample must keep on the CPU, by OpInfo name and position in
# sample.args (the operator requires a host tensor there, on every device).
CPU_RESIDENT_ARGUMENTS = {"tensor_split": {0}}

# Operators axon does not support yet, with the one-line reason reported.
AXON_SKIPS: dict[str, Callable] = {}

# The sparse layouts an OpInfo may declare, as (check name, layout, OpInfo flag).
SPARSE_LAYOUTS = (
    ("sparse_coo", torch.sparse_coo, "supports_sparse"),
    ("sparse_csr", torch.sparse_csr, "supports_sparse_csr"),
    ("sparse_csc", torch.sparse_csc, "supports_sparse_csc"),
    ("sparse_bsr", torch.sparse_bsr, "supports_sparse_bsr"),
    ("sparse_bsc", torch.sparse_bsc, "supports_sparse_bsc"),
)

ALL_CHECKS = ("values", "noncontiguous", "layouts", "inplace", "out", "errors", "gradients", "forward_ad", "native",
              "sparse", "nested")


def _permuted(tensor: torch.Tensor) -> torch.Tensor:
    """The same values laid out with the last two dimensions swapped in memory."""
    if not isinstance(tensor, torch.Tensor) or tensor.dim() < 2 or tensor.layout != torch.strided:
        return tensor
    moved = tensor.detach().transpose(-1, -2).contiguous().transpose(-1, -2)
    return moved.requires_grad_(tensor.requires_grad)


def _channels_last(tensor: torch.Tensor) -> torch.Tensor:
    """4-d and 5-d tensors in channels-last memory format; others unchanged."""
    if not isinstance(tensor, torch.Tensor) or tensor.layout != torch.strided or tensor.dim() not in (4, 5):
        return tensor
    layout = torch.channels_last if tensor.dim() == 4 else torch.channels_last_3d
    return tensor.detach().contiguous(memory_format=layout).requires_grad_(tensor.requires_grad)


# Input layouts every operator's results must follow as the CPU's do.
LAYOUTS = {"permuted": _permuted, "channels_last": _channels_last}


def operator_label(op) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def _call(function: Callable, sample) -> Any:
    return function(sample.input, *sample.args, **sample.kwargs)


def _move(sample):
    """The sample with every tensor (and every `device="cpu"` argument) moved to axon."""
    from torch.testing._internal.opinfo.core import SampleInput

    storages: dict = {}
    resident = CPU_RESIDENT_ARGUMENTS.get(_current_operator, set())
    with torch.no_grad():
        args = tuple(arg if index in resident else to_axon(arg, storages) for index, arg in enumerate(sample.args))
        kwargs = to_axon(sample.kwargs, storages)
        if kwargs.get("device") == "cpu":  # factories name their device as a string too
            kwargs["device"] = "axon"
        return SampleInput(to_axon(sample.input, storages), args=args, kwargs=kwargs,
                           output_process_fn_grad=sample.output_process_fn_grad,
                           broadcasts_input=sample.broadcasts_input, name=sample.name)


_current_operator = ""  # the OpInfo name being run, for CPU_RESIDENT_ARGUMENTS


def _call_axon(function: Callable, sample) -> Any:
    """Calls on axon and waits: a kernel's own checks surface at synchronization, as on any accelerator."""
    result = function(sample.input, *sample.args, **sample.kwargs)
    torch.axon.synchronize()
    return result


def _expect_same_error(cpu_error: Exception, run_on_axon: Callable[[], Any], what: str = "") -> None:
    """The CPU refused the call: axon must refuse it with the same exception type."""
    try:
        run_on_axon()
    except type(cpu_error):
        return
    except Exception as axon_error:
        raise Mismatch(f"{what}CPU raised {type(cpu_error).__name__}, axon raised "
                       f"{type(axon_error).__name__}: {str(axon_error)[:200]}") from None
    raise Mismatch(f"{what}CPU raised {type(cpu_error).__name__} ({str(cpu_error)[:120]}), axon did not") from None


def _compare_call(function: Callable, sample, *, random: bool, check_strides: bool = True) -> None:
    """Runs `function` on the CPU sample and on its axon copy; both must agree, including on errors."""
    try:
        expected = _call(function, sample)
    except Exception as cpu_error:
        _expect_same_error(cpu_error, lambda: _call_axon(function, _move(sample)))
        return
    moved = _move(sample)
    actual = _call_axon(function, moved)
    if random:
        _assert_same_metadata(actual, expected)
    else:
        assert_same(actual, expected, check_strides=check_strides, expect_axon=_mentions_axon(moved))


def _mentions_axon(sample) -> bool:
    """Whether the call involves axon at all (a factory without device= stays on the CPU)."""
    found = False

    def visit(value):
        nonlocal found
        if isinstance(value, torch.Tensor) and value.device.type == "axon":
            found = True
        elif isinstance(value, torch.device) and value.type == "axon" or value == "axon":
            found = True
        elif isinstance(value, (list, tuple)):
            for item in value:
                visit(item)
        elif isinstance(value, dict):
            for item in value.values():
                visit(item)

    visit([sample.input, sample.args, sample.kwargs])
    return found


def _assert_same_metadata(actual: Any, expected: Any) -> None:
    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, torch.Tensor) or actual.dtype != expected.dtype or actual.shape != expected.shape:
            raise Mismatch(f"random output: got {getattr(actual, 'dtype', actual)} "
                           f"{tuple(getattr(actual, 'shape', ()))}, CPU gives {expected.dtype} {tuple(expected.shape)}")
    elif isinstance(expected, (list, tuple)):
        for a, e in zip(actual, expected):
            _assert_same_metadata(a, e)


def _inplace_check(op, sample, *, random: bool) -> None:
    if sample.broadcasts_input:
        return
    variant = op.inplace_variant

    def run(s):
        if isinstance(s.input, torch.Tensor):
            target = s.input.clone()
        elif isinstance(s.input, (list, tuple)) and all(isinstance(t, torch.Tensor) for t in s.input):
            target = [t.clone() for t in s.input]  # a _foreach_ op's list: the CPU run must not write the sample's
        else:
            target = s.input
        result = variant(target, *s.args, **s.kwargs)
        torch.axon.synchronize()
        return result, target

    try:
        expected, expected_target = run(sample)
    except Exception as cpu_error:
        _expect_same_error(cpu_error, lambda: run(_move(sample)), "in-place: ")
        return
    actual, actual_target = run(_move(sample))
    if random:
        _assert_same_metadata(actual_target, expected_target)
    else:
        assert_same(actual_target, expected_target, check_strides=True, where="mutated input")


def _empty_like_outputs(value: Any, device: str) -> Any:
    if isinstance(value, torch.Tensor):
        return torch.empty(0, dtype=value.dtype, device=device)
    if isinstance(value, (list, tuple)):
        return type(value)(_empty_like_outputs(v, device) for v in value)
    return value


def _out_check(op, sample, *, random: bool) -> None:
    try:
        expected = _call(op, sample)
    except Exception:
        return  # covered by the values check
    if not isinstance(expected, (torch.Tensor, tuple, list)):
        return
    cpu_out = _empty_like_outputs(expected, "cpu")
    axon_out = _empty_like_outputs(expected, "axon")
    try:
        op(sample.input, *sample.args, **sample.kwargs, out=cpu_out)
    except Exception as cpu_error:
        moved = _move(sample)
        _expect_same_error(cpu_error, lambda: _call_axon(lambda *a, **k: op(*a, **k, out=axon_out), moved), "out=: ")
        return
    moved = _move(sample)
    op(moved.input, *moved.args, **moved.kwargs, out=axon_out)
    torch.axon.synchronize()
    if random:
        _assert_same_metadata(axon_out, cpu_out)
    else:
        assert_same(axon_out, cpu_out, check_strides=False, where="out=")


def _error_check(op) -> int:
    checked = 0
    # The device as PyTorch's test framework passes it: a string (some error_inputs_func call .startswith).
    for error_input in op.error_inputs("cpu"):
        sample = error_input.sample_input
        moved = _move(sample)
        try:
            _call_axon(op, moved)
        except error_input.error_type as error:
            import re

            if error_input.error_regex and not re.search(error_input.error_regex, str(error)):
                # The CPU's own message must also match for this to count against axon.
                try:
                    _call(op, sample)
                except Exception as cpu_error:
                    if type(cpu_error) is type(error) and str(cpu_error) == str(error):
                        continue
                raise Mismatch(f"error message {str(error)[:160]!r} does not match {error_input.error_regex!r}") \
                    from error
        except Exception as error:
            raise Mismatch(f"expected {error_input.error_type.__name__}, axon raised "
                           f"{type(error).__name__}: {str(error)[:160]}") from None
        else:
            # Some error inputs are CPU-specific; only count it if the CPU raises.
            try:
                _call(op, sample)
            except error_input.error_type:
                raise Mismatch(f"expected {error_input.error_type.__name__}, axon raised nothing") from None
            except Exception:
                pass
        checked += 1
    return checked


def _differentiable_inputs(sample) -> list[torch.Tensor]:
    tensors = [sample.input] + list(sample.args) + list(sample.kwargs.values())
    flat = []
    for value in tensors:
        if isinstance(value, torch.Tensor):
            flat.append(value)
        elif isinstance(value, (list, tuple)):
            flat.extend(v for v in value if isinstance(v, torch.Tensor))
    return [t for t in flat if t.requires_grad]


def _tensor_outputs(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensor_outputs(v)]
    return []


def _gradients(op, sample) -> list:
    inputs = _differentiable_inputs(sample)
    result = _call(op, sample)
    if sample.output_process_fn_grad is not None:
        result = sample.output_process_fn_grad(result)
    outputs = [t for t in _tensor_outputs(result) if t.requires_grad]
    if not inputs or not outputs:
        return []
    generator = torch.Generator().manual_seed(0)
    grad_outputs = [torch.randn(o.shape, dtype=o.dtype, generator=generator).to(o.device)
                    if o.dtype.is_floating_point or o.dtype.is_complex else None for o in outputs]
    return list(torch.autograd.grad(outputs, inputs, grad_outputs, allow_unused=True))


def _gradient_check(op, sample) -> None:
    try:
        expected = _gradients(op, sample)
    except Exception:
        return  # the CPU cannot differentiate this sample
    actual = _gradients(op, _move(sample))
    torch.axon.synchronize()
    assert_same(actual, expected, check_strides=False, where="gradient")


def _forward_ad_values(op, sample) -> list:
    generator = torch.Generator().manual_seed(1)
    with forward_ad.dual_level():
        def dual(t):
            if isinstance(t, torch.Tensor) and t.requires_grad and (t.dtype.is_floating_point or t.dtype.is_complex):
                tangent = torch.randn(t.shape, dtype=t.dtype, generator=generator).to(t.device)
                return forward_ad.make_dual(t.detach(), tangent)
            return t

        dual_sample = sample.transform(dual)
        result = _call(op, dual_sample)
        tangents = [forward_ad.unpack_dual(t).tangent for t in _tensor_outputs(result)]
        return [t.clone() if t is not None else None for t in tangents]


def _forward_ad_check(op, sample) -> None:
    try:
        expected = _forward_ad_values(op, sample)
    except Exception:
        return
    actual = _forward_ad_values(op, _move(sample))
    torch.axon.synchronize()
    assert_same(actual, expected, check_strides=False, where="forward-mode tangent")


def _samples(op, dtype, requires_grad: bool, limit: int | None) -> list:
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        iterator = op.sample_inputs(torch.device("cpu"), dtype, requires_grad=requires_grad)
        return list(itertools.islice(iterator, limit))


def _sparse_samples(op, layout: torch.layout, dtype: torch.dtype, limit: int | None) -> list:
    """The OpInfo's samples in `layout` (op.sample_inputs_sparse), the ones PyTorch's test_sparse runs.

    Elementwise unary operators without sparse samples of their own get their
    2-d dense samples converted to `layout`, as test_sparse's consistency
    tests do.
    """
    from torch.testing._internal.opinfo.core import SampleInput, UnaryUfuncInfo

    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return list(itertools.islice(op.sample_inputs_sparse(layout, torch.device("cpu"), dtype), limit))
        except NotImplementedError:
            if not isinstance(op, UnaryUfuncInfo):
                raise
        blocksize = (1, 1) if layout in (torch.sparse_bsr, torch.sparse_bsc) else None
        converted = [SampleInput(s.input.to_sparse(layout=layout, blocksize=blocksize), args=s.args, kwargs=s.kwargs)
                     for s in op.sample_inputs(torch.device("cpu"), dtype)
                     if s.input.dim() == 2 and not s.args and not s.kwargs]
        return converted[:limit]


@functools.lru_cache(maxsize=1)
def _nested_opinfos() -> dict:
    """njt_op_db (PyTorch's OpInfos with nested samples) by (name, variant), those that support nested inputs."""
    from torch.testing._internal.opinfo.definitions.nested import njt_op_db

    return {(op.name, op.variant_test_name): op for op in njt_op_db if op.supports_njt}


def _strided_nested(value: Any) -> Any:
    """A jagged nested tensor as a strided one (the layout with ATen kernels); other values unchanged."""
    if isinstance(value, torch.Tensor) and value.is_nested and value.layout == torch.jagged:
        return torch.nested.nested_tensor(list(value.detach().unbind()), layout=torch.strided)
    return value


def _nested_samples(op, dtype: torch.dtype, limit: int | None) -> dict[str, list]:
    """The nested samples test_nestedtensor runs (jagged layout), and the same as strided nested tensors."""
    from torch.testing._internal.opinfo.core import SampleInput

    nested_op = _nested_opinfos().get((op.name, op.variant_test_name))
    if nested_op is None:
        return {}
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jagged = list(itertools.islice(nested_op.sample_inputs(torch.device("cpu"), dtype), limit))
        strided = [SampleInput(_strided_nested(s.input), args=tuple(_strided_nested(a) for a in s.args),
                               kwargs={k: _strided_nested(v) for k, v in s.kwargs.items()}) for s in jagged
                   if s.input.is_contiguous()]
    return {"nested_jagged": jagged, "nested_strided": strided}


def _transformed(samples: list, transform: Callable) -> list:
    """`transform` applied to each sample; samples the CPU cannot transform (a CSR input made
    noncontiguous) are left out."""
    transformed = []
    for sample in samples:
        try:
            transformed.append(transform(sample))
        except RuntimeError:
            continue
    return transformed


def run_operator(op, *, dtypes: Iterable[torch.dtype] | None = None, max_samples: int | None = None,
                 checks: Iterable[str] = ALL_CHECKS) -> list[Result]:
    """All results for one OpInfo."""
    global _current_operator
    _current_operator = op.name
    label = operator_label(op)
    for reason, applies in AXON_SKIPS.items():
        if applies(op):
            return [Result(label, "values", "-", Outcome.SKIPPED_AXON, reason)]
    checks = set(checks)
    random = op.name in RANDOM_OPERATORS
    results: list[Result] = []
    supported = sorted(op.supported_dtypes("cpu"), key=str)
    dtypes = supported if dtypes is None else [d for d in dtypes if d in supported]
    if not supported:
        return [Result(label, "values", "-", Outcome.SKIPPED, "the CPU supports no dtype for this operator")]
    torch_axon.reset_fallback_ops()

    def record(check: str, dtype: str, body: Callable[[], Any]) -> None:
        results.append(run_check(label, check, dtype, body))

    for dtype in dtypes:
        name = str(dtype).replace("torch.", "")
        try:
            samples = _samples(op, dtype, False, max_samples)
        except Exception as error:
            results.append(Result(label, "values", name, Outcome.SKIPPED,
                                  f"OpInfo cannot make samples on CPU: {type(error).__name__}"))
            continue
        if "values" in checks:
            record("values", name, lambda: [_compare_call(op, s, random=random) for s in samples])
        if "noncontiguous" in checks:
            record("noncontiguous", name,
                   lambda: [_compare_call(op, s, random=random)
                            for s in _transformed(samples, lambda s: s.noncontiguous())])
        if "layouts" in checks:
            record("layouts", name,
                   lambda: [_compare_call(op, s.transform(layout), random=random)
                            for s in samples for layout in LAYOUTS.values()])
        if "inplace" in checks and op.inplace_variant is not None:
            record("inplace", name, lambda: [_inplace_check(op, s, random=random) for s in samples])
        if "out" in checks and op.supports_out:
            record("out", name, lambda: [_out_check(op, s, random=random) for s in samples])
        if "sparse" in checks:
            for check, layout, flag in SPARSE_LAYOUTS:
                if not getattr(op, flag, False):
                    continue
                try:
                    sparse_samples = _sparse_samples(op, layout, dtype, max_samples)
                except Exception as error:
                    results.append(Result(label, check, name, Outcome.SKIPPED,
                                          f"OpInfo cannot make {check} samples on CPU: {type(error).__name__}"))
                    continue
                record(check, name, lambda samples=sparse_samples: [
                    _compare_call(op, s, random=random, check_strides=False) for s in samples])
        if "nested" in checks:
            try:
                nested = _nested_samples(op, dtype, max_samples)
            except Exception as error:
                nested = {}
                results.append(Result(label, "nested", name, Outcome.SKIPPED,
                                      f"OpInfo cannot make nested samples on CPU: {type(error).__name__}"))
            for check, nested_samples in nested.items():
                if nested_samples:
                    record(check, name, lambda samples=nested_samples: [
                        _compare_call(op, s, random=random, check_strides=False) for s in samples])
        differentiable = dtype.is_floating_point or dtype.is_complex
        if not random and differentiable and op.supports_autograd and dtype in op.supported_backward_dtypes("cpu"):
            grad_samples = None
            if "gradients" in checks or "forward_ad" in checks:
                try:
                    grad_samples = _samples(op, dtype, True, max_samples)
                except Exception:
                    grad_samples = None
            if grad_samples is not None and "gradients" in checks:
                record("gradients", name, lambda: [_gradient_check(op, s) for s in grad_samples])
            if grad_samples is not None and "forward_ad" in checks and op.supports_forward_ad:
                record("forward_ad", name, lambda: [_forward_ad_check(op, s) for s in grad_samples])
    if "errors" in checks and op.error_inputs_func is not None:
        record("errors", "-", lambda: _error_check(op))
    if "native" in checks:
        results.append(run_check(label, "native", "-", require_native))
    try:
        torch.axon.synchronize()
    except RuntimeError as error:  # an error no check waited for: attribute it to this operator
        results.append(Result(label, "values", "-", Outcome.FAILED, f"pending device error: {str(error)[:240]}"))
    return results
