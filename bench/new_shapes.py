"""New shapes: a decode loop whose KV cache grows by one token per step, in a fresh process per device.

    python bench/new_shapes.py [--steps 200]

Every step calls `torch.cat`, `scaled_dot_product_attention` and `layer_norm` at shapes the process has not
seen, the pattern of generation, variable-length batches and detection models. Each device runs in its own
fresh process, so axon pays for every new shape as a user's first run does. Reported, CPU and axon, with
CPU time / axon time: the first token (one-time costs: the first meta kernels written in Python import
torch._dynamo and sympy, about a second); each later token of that first pass (new shapes every step); and
each token of a second pass in the same process (shapes seen). Issue 14's target for new shapes: axon
within 1.2x of the CPU, a ratio >= 0.83.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap

LOOP = textwrap.dedent("""
    import json, sys, time, torch
    import torch.nn.functional as F
    device, steps = sys.argv[1], int(sys.argv[2])
    torch.manual_seed(0)
    layers, width, heads = 4, 256, 4
    # Drawn on the CPU (each device has its own random stream), then moved.
    weights = [((torch.randn(width, 3 * width) / 16).to(device), (torch.randn(width, width) / 16).to(device))
               for _ in range(layers)]
    start_token = torch.randn(1, 1, width)

    def sync():
        if device == "axon":
            torch.axon.synchronize()

    def decode(first_token_seconds):
        x = start_token.to(device)
        caches = [(None, None)] * layers
        start = time.perf_counter()
        for step in range(steps):
            if step == 1:
                sync()
                first_token_seconds.append(time.perf_counter() - start)
            for layer, (qkv_weight, out_weight) in enumerate(weights):
                q, k, v = (F.layer_norm(x, (width,)) @ qkv_weight).split(width, dim=-1)
                past_k, past_v = caches[layer]
                k = k if past_k is None else torch.cat([past_k, k], dim=1)
                v = v if past_v is None else torch.cat([past_v, v], dim=1)
                caches[layer] = (k, v)
                heads_of = lambda t: t.view(1, -1, heads, width // heads).transpose(1, 2)
                attended = F.scaled_dot_product_attention(heads_of(q), heads_of(k), heads_of(v))
                x = x + attended.transpose(1, 2).reshape(1, 1, width) @ out_weight
        sync()
        return x

    times, first_tokens = [], []
    for _ in range(2):
        start = time.perf_counter()
        result = decode(first_tokens)
        total = time.perf_counter() - start
        times.append((total - first_tokens[-1]) / (steps - 1) * 1e3)
    print(json.dumps({"first token": first_tokens[0] * 1e3, "first": times[0], "again": times[1],
                      "checksum": float(result.sum())}))
""")


def run(device: str, steps: int) -> dict:
    output = subprocess.run([sys.executable, "-c", LOOP, device, str(steps)], check=True, capture_output=True,
                            text=True, env=dict(os.environ)).stdout
    return json.loads(output.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    cpu, axon = run("cpu", args.steps), run("axon", args.steps)
    print(f"{'decode loop, ms':40} {'cpu':>8} {'axon':>8} {'cpu/axon':>9}")
    rows = (("first token (one-time costs)", "first token"),
            ("per later token, new shapes each", "first"),
            ("per token, the same shapes again", "again"))
    for label, key in rows:
        print(f"{label:40} {cpu[key]:8.3f} {axon[key]:8.3f} {cpu[key] / axon[key]:9.2f}")
    if abs(cpu["checksum"] - axon["checksum"]) > 1e-2 * max(1.0, abs(cpu["checksum"])):
        print(f"results differ: cpu {cpu['checksum']} axon {axon['checksum']}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
