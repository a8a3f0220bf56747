"""Helpers shared by the torchrun worker scripts of tests/test_distributed*.py."""

from __future__ import annotations

import copy
import os
import sys
import traceback

import torch
import torch.distributed as dist

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")
if EXAMPLES not in sys.path:
    sys.path.insert(0, EXAMPLES)


def rank() -> int:
    return int(os.environ["RANK"])


def device() -> torch.device:
    return torch.device("axon", rank() % torch.axon.device_count())


def close(actual: torch.Tensor, expected: torch.Tensor, what: str, atol: float = 1e-5, rtol: float = 1e-5) -> None:
    actual = actual.detach().cpu()
    expected = expected.detach().cpu()
    if actual.dtype != expected.dtype or actual.shape != expected.shape:
        raise AssertionError(f"{what}: expected {expected.dtype}{list(expected.shape)}, "
                             f"got {actual.dtype}{list(actual.shape)}")
    if actual.dtype in (torch.bool,) or not actual.is_floating_point():
        ok = torch.equal(actual, expected)
    else:
        ok = torch.allclose(actual.float(), expected.float(), atol=atol, rtol=rtol)
    if not ok:
        raise AssertionError(f"{what}: expected\n{expected}\ngot\n{actual}")


def run_checks(checks, destroy: bool = True) -> None:
    """Runs each check (name, function), prints one line each and exits 1 if any failed."""
    failed = 0
    for check in checks:
        name = check.__name__
        try:
            check()
            print(f"[rank {rank()}] OK {name}", flush=True)
        except Exception:  # noqa: BLE001 - report every failure, keep going
            failed += 1
            print(f"[rank {rank()}] FAIL {name}\n{traceback.format_exc()}", flush=True)
    if destroy and dist.is_initialized():
        dist.destroy_process_group()
    print(f"[rank {rank()}] {'ALL OK' if failed == 0 else f'{failed} FAILED'}", flush=True)
    sys.exit(1 if failed else 0)


def token_batches(seed: int, steps: int, vocab: int, context: int, batch: int):
    """`steps` deterministic (tokens, next tokens) language-model batches on this rank's device."""
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        tokens = torch.randint(0, vocab, (batch, context + 1), generator=generator)
        yield tokens[:, :-1].to(device()), tokens[:, 1:].to(device())


def reference_losses(model, batches, optimizer_factory=lambda p: torch.optim.SGD(p, lr=0.1)):
    """Trains a copy of `model` on one process; returns (losses, trained copy) to compare against."""
    model = copy.deepcopy(model)
    optimizer = optimizer_factory(model.parameters())
    losses = []
    for tokens, targets in batches:
        _, loss = model(tokens, targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses, model
