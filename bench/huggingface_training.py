"""Hugging Face training steps, eager and default torch.compile, CPU against axon, each in fresh processes.

    python bench/huggingface_training.py [--models bert,gpt2]

BERT (masked LM) and GPT-2 (causal LM) built from configs with random weights (hidden size 256, 4 layers,
4 heads, vocabulary 1000, the configs' dropout of 0.1), a batch of 8 sequences of 128 tokens, one step of
forward with labels, backward and AdamW. Each device runs eager, then `torch.compile(model)` (Inductor; on
axon its C++ kernels launched on axon streams, torch_axon/inductor/), median of 8 steps after warm-up, in
processes of their own, alternating, best of two rounds (timing.in_fresh_processes says why). Reported: ms
per step, axon eager / axon compiled (what compiling gains on axon; issue 14's target >= 1.3) and Inductor on
CPU tensors / Inductor on axon (higher is better for axon).
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

from timing import in_fresh_processes, measure_or_compare, synchronize

warnings.simplefilter("ignore")
STEPS = 8


def _models() -> list[str]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="bert,gpt2")
    parser.add_argument("--device")
    return parser.parse_args().models.split(",")


def build(name: str):
    import transformers

    if name == "bert":
        config = transformers.BertConfig(hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                                         intermediate_size=1024, vocab_size=1000)
        return transformers.BertForMaskedLM(config)
    config = transformers.GPT2Config(n_embd=256, n_layer=4, n_head=4, vocab_size=1000)
    return transformers.GPT2LMHeadModel(config)


def step_seconds(model, inputs: dict, device: str, compiled: bool) -> float:
    import torch

    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    forward = torch.compile(model) if compiled else model

    def step():
        loss = forward(**inputs).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    for _ in range(3):  # the compile, then steps whose allocations and caches are warm
        step()
    synchronize(device)
    samples = []
    for _ in range(STEPS):
        start = time.perf_counter()
        step().item()
        synchronize(device)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def measure_device(device: str) -> dict[str, float]:
    import torch

    if device == "axon":
        import torch_axon  # noqa: F401

    times = {}
    for name in _models():
        for compiled in (False, True):
            torch._dynamo.reset()
            torch.manual_seed(0)
            model = build(name).train().to(device)
            tokens = torch.randint(0, 1000, (8, 128))
            inputs = {"input_ids": tokens.to(device), "labels": tokens.to(device)}
            times[f"{name} {'compiled' if compiled else 'eager'}"] = step_seconds(model, inputs, device, compiled)
    return times


def compare() -> int:
    models = _models()
    times = in_fresh_processes(__file__, arguments=("--models", ",".join(models)))
    cpu, axon = times["cpu"], times["axon"]
    print(f"{'model':<8}{'cpu eager ms':>15}{'cpu compiled ms':>18}{'axon eager ms':>16}{'axon compiled ms':>19}"
          f"{'axon eager/compiled':>22}{'cpu/axon compiled':>20}")
    for name in models:
        row = [cpu[f"{name} eager"], cpu[f"{name} compiled"], axon[f"{name} eager"], axon[f"{name} compiled"]]
        print(f"{name:<8}" + "".join(f"{value * 1e3:>{width}.1f}" for value, width in zip(row, (15, 18, 16, 19)))
              + f"{row[2] / row[3]:>22.2f}{row[1] / row[3]:>20.2f}")
    return 0


if __name__ == "__main__":
    measure_or_compare(measure_device, compare)
