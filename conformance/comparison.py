"""Comparing what axon produced with what the CPU produced."""

from __future__ import annotations

from typing import Any

import torch


class Mismatch(AssertionError):
    pass


def _dense(tensor: torch.Tensor) -> bool:
    from torch._prims_common import is_non_overlapping_and_dense_or_false

    return is_non_overlapping_and_dense_or_false(tensor)


def to_cpu(value: Any) -> Any:
    """Axon tensors (inside any container) as CPU tensors; other values unchanged."""
    if isinstance(value, torch.Tensor):
        if value.device.type != "axon":
            return value.detach()
        if value.is_nested and value.layout == torch.strided and not value.is_contiguous():
            value = value.contiguous()  # PyTorch moves only contiguous nested tensors between devices
        return value.detach().cpu()
    if isinstance(value, (list, tuple)):
        return type(value)(to_cpu(v) for v in value) if not hasattr(value, "_fields") else type(value)(
            *(to_cpu(v) for v in value))
    if isinstance(value, dict):
        return {k: to_cpu(v) for k, v in value.items()}
    return value


def to_axon(value: Any, storages: dict | None = None) -> Any:
    """CPU tensors (inside any container) moved to axon, keeping requires_grad.

    Tensors that share a CPU storage share one axon storage too (`storages`
    maps CPU storage addresses to axon storages), so samples that test
    aliasing between arguments (out= overlapping an input) keep it; and one
    tensor passed twice is one axon tensor passed twice (a loss given the same
    tensor as input and target gets the gradient of both uses in one place).
    """
    storages = {} if storages is None else storages
    if isinstance(value, torch.Tensor):
        if value.device.type != "cpu":
            return value
        key = ("tensor", id(value))
        if key in storages:
            return storages[key][1]
        moved = _same_layout_on_axon(value.detach(), storages)
        # A fresh leaf either way: the CPU tensor's history stays on the CPU.
        if moved.is_floating_point() or moved.is_complex():
            moved = moved.requires_grad_(value.requires_grad)
        storages[key] = (value, moved)  # keeps `value` alive, so its id is not reused meanwhile
        return moved
    if isinstance(value, torch.device) and value.type == "cpu":
        return torch.device("axon")
    if isinstance(value, (list, tuple)):
        moved = [to_axon(v, storages) for v in value]
        return type(value)(*moved) if hasattr(value, "_fields") else type(value)(moved)
    if isinstance(value, dict):
        return {k: to_axon(v, storages) for k, v in value.items()}
    return value


def _same_layout_on_axon(tensor: torch.Tensor, storages: dict) -> torch.Tensor:
    """An axon copy with the same storage, offset and strides (as_strided semantics depend on them)."""
    if tensor.layout != torch.strided or tensor.is_nested or tensor.is_conj() or tensor.is_neg():
        return tensor.to("axon")
    storage = tensor.untyped_storage()
    key = (storage.data_ptr(), storage.nbytes())
    if key not in storages or storage.nbytes() == 0:
        device_storage = torch.empty(storage.nbytes(), dtype=torch.uint8, device="axon").untyped_storage()
        if storage.nbytes():
            device_storage.copy_(storage)
        storages[key] = device_storage
    on_axon = torch.empty(0, dtype=tensor.dtype, device="axon")
    return on_axon.set_(storages[key], tensor.storage_offset(), tensor.shape, tensor.stride())


def _layout(tensor: torch.Tensor) -> tuple:
    """Strides that matter: a dimension of size 1 is never stepped over, so its stride is free."""
    return tuple(stride for size, stride in zip(tensor.shape, tensor.stride()) if size != 1)


def _members(tensor: torch.Tensor) -> list[torch.Tensor]:
    """The dense tensors a sparse or nested tensor is made of."""
    if tensor.is_nested:
        return list(tensor.unbind())
    if tensor.layout == torch.sparse_coo:
        return [tensor._indices(), tensor._values()]
    if tensor.layout in (torch.sparse_csr, torch.sparse_bsr):
        return [tensor.crow_indices(), tensor.col_indices(), tensor.values()]
    return [tensor.ccol_indices(), tensor.row_indices(), tensor.values()]


def _assert_same_layout_members(actual: torch.Tensor, expected: torch.Tensor, where: str) -> None:
    """Sparse and nested results: the same members (indices, values, components), and flags."""
    if not expected.is_nested and actual.shape != expected.shape:
        raise Mismatch(f"{where}: shape {tuple(actual.shape)}, CPU gives {tuple(expected.shape)}")
    if expected.layout == torch.sparse_coo and actual.is_coalesced() != expected.is_coalesced():
        raise Mismatch(f"{where}: is_coalesced() {actual.is_coalesced()}, CPU gives {expected.is_coalesced()}")
    actual_members, expected_members = _members(actual), _members(expected)
    if len(actual_members) != len(expected_members):
        raise Mismatch(f"{where}: {len(actual_members)} components, CPU gives {len(expected_members)}")
    for index, (a, e) in enumerate(zip(actual_members, expected_members)):
        if a.shape != e.shape or a.dtype != e.dtype:
            raise Mismatch(f"{where} member {index}: {a.dtype} {tuple(a.shape)}, CPU gives {e.dtype} {tuple(e.shape)}")
        try:
            torch.testing.assert_close(a, e, equal_nan=True, check_stride=False)
        except AssertionError as error:
            raise Mismatch(f"{where} member {index}: values differ: {str(error).splitlines()[0:3]}") from None


def assert_same(axon_value: Any, cpu_value: Any, *, check_strides: bool, where: str = "output",
                expect_axon: bool = True) -> None:
    """Raises Mismatch unless axon's result equals the CPU's (values, dtype, shape, device, strides)."""
    if isinstance(cpu_value, torch.Tensor):
        if not isinstance(axon_value, torch.Tensor):
            raise Mismatch(f"{where}: expected a tensor, got {type(axon_value).__name__}")
        if expect_axon and axon_value.device.type != "axon" and cpu_value.device.type == "cpu" \
                and cpu_value.numel() > 0:
            # Results that live on the CPU for CPU inputs must live on axon for axon inputs.
            raise Mismatch(f"{where}: result is on {axon_value.device}, expected axon")
        if axon_value.dtype != cpu_value.dtype:
            raise Mismatch(f"{where}: dtype {axon_value.dtype}, CPU gives {cpu_value.dtype}")
        if axon_value.layout != cpu_value.layout or axon_value.is_nested != cpu_value.is_nested:
            raise Mismatch(f"{where}: layout {axon_value.layout}{' (nested)' * axon_value.is_nested}, CPU gives "
                           f"{cpu_value.layout}{' (nested)' * cpu_value.is_nested}")
        if cpu_value.layout != torch.strided or cpu_value.is_nested:
            _assert_same_layout_members(to_cpu(axon_value), cpu_value, where)
            return
        if axon_value.shape != cpu_value.shape:
            raise Mismatch(f"{where}: shape {tuple(axon_value.shape)}, CPU gives {tuple(cpu_value.shape)}")
        if (check_strides and cpu_value.numel() > 1 and _dense(cpu_value)
                and _layout(axon_value) != _layout(cpu_value)):
            raise Mismatch(f"{where}: strides {axon_value.stride()}, CPU gives {cpu_value.stride()}")
        actual = to_cpu(axon_value)
        try:
            torch.testing.assert_close(actual, cpu_value, equal_nan=True, check_device=False,
                                       check_stride=False, check_layout=False)
        except AssertionError as error:
            raise Mismatch(f"{where}: values differ: {str(error).splitlines()[0:3]}") from None
        return
    if isinstance(cpu_value, (list, tuple)):
        if not isinstance(axon_value, (list, tuple)) or len(axon_value) != len(cpu_value):
            raise Mismatch(f"{where}: expected a sequence of {len(cpu_value)}, got {axon_value!r:.80}")
        for index, (a, c) in enumerate(zip(axon_value, cpu_value)):
            assert_same(a, c, check_strides=check_strides, where=f"{where}[{index}]", expect_axon=expect_axon)
        return
    if isinstance(cpu_value, float) and isinstance(axon_value, float):
        if not (cpu_value == axon_value or (cpu_value != cpu_value and axon_value != axon_value)):
            torch.testing.assert_close(axon_value, cpu_value)
        return
    if axon_value != cpu_value:
        raise Mismatch(f"{where}: {axon_value!r:.80} != CPU's {cpu_value!r:.80}")
