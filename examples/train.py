"""The training example: train a small GPT on `axon` and on the CPU, side by side.

Both runs start from the same weights and see the same batches, so their
losses must agree to float tolerance; the job prints both, the throughput of
each, axon's memory use, and a sample from the axon-trained model, and exits
non-zero if the losses diverge.

    python examples/train.py [--steps 80] [--batch 16] [--context 64] [--compile]

With --compile the axon model runs through torch.compile(backend="axon")
(StableHLO → XLA); the job then also prints what was compiled and what came
from the on-disk cache (a second run with a warm cache compiles nothing).
"""

from __future__ import annotations

import argparse
import random
import sys
import time

import torch
from tiny_gpt import TinyGPT


def make_corpus(characters: int, seed: int = 0) -> str:
    """Deterministic toy English from a small grammar (no downloads needed)."""
    rng = random.Random(seed)
    subjects = ["the cat", "a dog", "my friend", "the robot", "an old man", "the axon chip"]
    verbs = ["sees", "likes", "builds", "follows", "trains", "computes"]
    objects = ["the ball", "a model", "the river", "many tensors", "a small house", "the gradient"]
    endings = [".", "!", " today.", " again."]
    parts = []
    while sum(len(p) for p in parts) < characters:
        parts.append(f"{rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(objects)}{rng.choice(endings)} ")
    return "".join(parts)[:characters]


def batches(data: torch.Tensor, steps: int, batch: int, context: int, seed: int):
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        starts = torch.randint(0, len(data) - context - 1, (batch,), generator=generator)
        x = torch.stack([data[s : s + context] for s in starts.tolist()])
        y = torch.stack([data[s + 1 : s + context + 1] for s in starts.tolist()])
        yield x, y


def train(model: torch.nn.Module, device: str, data: torch.Tensor, args,
          compiled: bool = False) -> tuple[list[float], float]:
    model = model.to(device)
    runner = torch.compile(model, backend="axon") if compiled else model
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    losses = []
    start = None
    for step, (x, y) in enumerate(batches(data, args.steps, args.batch, args.context, seed=1)):
        if step == 1:  # time steady-state steps: the first one warms up caches on both devices
            if device != "cpu":
                torch.accelerator.synchronize()
            start = time.perf_counter()
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        _, loss = runner(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.detach())
    values = [loss.item() for loss in losses]  # one host sync at the end
    if device != "cpu":
        torch.accelerator.synchronize()
    return values, time.perf_counter() - (start if start is not None else time.perf_counter())


@torch.no_grad()
def sample(model: torch.nn.Module, prompt: str, stoi: dict, itos: dict, length: int, context: int) -> str:
    model.eval()
    device = next(model.parameters()).device
    tokens = torch.tensor([[stoi[c] for c in prompt]], device=device)
    for _ in range(length):
        logits = model(tokens[:, -context:])
        tokens = torch.cat([tokens, logits[:, -1].argmax(dim=-1, keepdim=True)], dim=1)
    return "".join(itos[i] for i in tokens[0].tolist())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--context", type=int, default=64)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--tolerance", type=float, default=1e-3, help="max |loss_axon - loss_cpu| allowed")
    parser.add_argument("--compile", action="store_true",
                        help="train the axon model with torch.compile(backend='axon')")
    args = parser.parse_args()

    text = make_corpus(200_000)
    vocab = sorted(set(text))
    stoi = {c: i for i, c in enumerate(vocab)}
    itos = {i: c for c, i in stoi.items()}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)

    print(f"torch {torch.__version__}, accelerator: {torch.accelerator.current_accelerator()}, "
          f"{torch.axon.device_count()} axon devices ({torch.axon.get_device_name(0)}, "
          f"{torch.axon.get_device_properties(0).total_memory / 2**30:.0f} GiB each)")
    torch.manual_seed(0)
    reference = TinyGPT(len(vocab), args.context, width=args.width, layers=args.layers)
    parameters = sum(p.numel() for p in reference.parameters())
    print(f"model: TinyGPT, {parameters / 1e6:.2f}M parameters, {args.layers} layers, width {args.width}; "
          f"{args.steps} AdamW steps of {args.batch}x{args.context} tokens\n")

    cpu_model = TinyGPT(len(vocab), args.context, width=args.width, layers=args.layers)
    cpu_model.load_state_dict(reference.state_dict())
    axon_model = TinyGPT(len(vocab), args.context, width=args.width, layers=args.layers)
    axon_model.load_state_dict(reference.state_dict())

    torch.axon.reset_peak_memory_stats()
    # axon first: a CPU run leaves the main thread's OpenMP team spinning for a
    # while, which on a 2-core machine slows the device's worker thread.
    axon_losses, axon_seconds = train(axon_model, "axon", data, args, compiled=args.compile)
    cpu_losses, cpu_seconds = train(cpu_model, "cpu", data, args)

    print(f"{'step':>6} {'loss (cpu)':>12} {'loss (axon)':>12} {'|difference|':>14}")
    report_every = max(1, args.steps // 10)
    for step in range(args.steps):
        if step % report_every == 0 or step == args.steps - 1:
            diff = abs(cpu_losses[step] - axon_losses[step])
            print(f"{step:>6} {cpu_losses[step]:>12.5f} {axon_losses[step]:>12.5f} {diff:>14.2e}")

    tokens = max(1, args.steps - 1) * args.batch * args.context  # steady-state steps (after the first)
    max_diff = max(abs(a - b) for a, b in zip(cpu_losses, axon_losses))
    print(f"\nthroughput: cpu {tokens / cpu_seconds:,.0f} tokens/s ({cpu_seconds:.2f} s), "
          f"axon {tokens / axon_seconds:,.0f} tokens/s ({axon_seconds:.2f} s); "
          f"axon/cpu time ratio {axon_seconds / cpu_seconds:.2f}")
    print(f"axon memory: peak allocated {torch.axon.max_memory_allocated() / 2**20:.1f} MiB, "
          f"reserved {torch.axon.memory_reserved() / 2**20:.1f} MiB")
    if args.compile:
        import torch_axon.compile

        print(torch_axon.compile.report())
    print(f"sample (axon model): {sample(axon_model, 'the cat ', stoi, itos, 60, args.context)!r}")
    print(f"max |loss difference| over {args.steps} steps: {max_diff:.2e} (tolerance {args.tolerance:.0e})")
    if max_diff > args.tolerance:
        print("FAILED: axon and CPU losses diverged")
        return 1
    print("OK: axon matches the CPU run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
