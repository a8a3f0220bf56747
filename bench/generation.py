"""Hugging Face generation: greedy decoding with a KV cache, CPU against axon, each in fresh processes.

    python bench/generation.py

Tiny gpt2 and llama models built from configs with random weights (seeded, built on the CPU and moved)
generate 64 new tokens from an 8-token prompt, greedily, twice in one process: the first call pays for
every new shape as a user's first run does (the cache grows by a token per step), the second runs the
same shapes again. Reported per generated token, CPU and axon, with CPU time / axon time. Issue 14's
target: the first call within 1.2x of the CPU (a ratio >= 0.83) with identical tokens. Exits non-zero if
the tokens differ.
"""

from __future__ import annotations

import time

from timing import in_fresh_processes, measure_or_compare, print_table

NEW_TOKENS = 64


def build(name: str):
    import transformers

    if name == "gpt2":
        config = transformers.GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=1000, n_positions=1024)
        return transformers.GPT2LMHeadModel(config)
    config = transformers.LlamaConfig(hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, vocab_size=1000,
                                      max_position_embeddings=256)
    return transformers.LlamaForCausalLM(config)


def measure(device: str) -> dict[str, float]:
    import torch

    if device == "axon":
        import torch_axon  # noqa: F401

    measurements = {}
    for name in ("gpt2", "llama"):
        torch.manual_seed(0)
        model = build(name).eval().to(device)
        prompt = torch.randint(0, 1000, (1, 8)).to(device)
        for call in ("first", "again"):
            start = time.perf_counter()
            with torch.no_grad():
                tokens = model.generate(prompt, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS,
                                        do_sample=False, pad_token_id=0)
            tokens = tokens.cpu()  # synchronizes
            measurements[f"{name} {call}"] = (time.perf_counter() - start) / NEW_TOKENS
        # The tokens as one number: equal numbers from both devices mean identical tokens.
        weights = torch.arange(1, tokens.numel() + 1, dtype=torch.float64)
        measurements[f"{name} tokens"] = float((tokens.flatten().double() * weights).sum())
    return measurements


def main() -> int:
    best = in_fresh_processes(__file__)
    cpu, axon = best["cpu"], best["axon"]
    rows = []
    for name in ("gpt2", "llama"):
        for call, label in (("first", "first call (new shapes)"), ("again", "second call (shapes seen)")):
            rows.append((f"{name}, {label}", cpu[f"{name} {call}"] * 1e3, axon[f"{name} {call}"] * 1e3))
    print_table("generate: time per new token", rows, "ms", "cpu/axon")
    failed = False
    for name in ("gpt2", "llama"):
        if cpu[f"{name} tokens"] != axon[f"{name} tokens"]:
            print(f"{name}: the generated tokens differ")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    measure_or_compare(measure, main)
