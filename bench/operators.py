"""Operator benchmarks: axon against torch on the CPU, measured in the same run, each in its own processes.

    python bench/operators.py

Prints (1) the per-call time of tiny-tensor operators (dispatch overhead;
issue 14's target axon/cpu <= 1.2) and (2) the throughput of large-tensor
operators (target axon/cpu >= 0.95). Each device runs in processes of its own,
alternating, and each number is the best of two (timing.in_fresh_processes says why).
"""

from __future__ import annotations

import sys

import torch
import torch.nn.functional as F
from timing import device_argument, in_fresh_processes, print_table, report_and_exit, seconds_per_call


def tiny_cases(device: str) -> dict:
    a = torch.randn(16, device=device)
    b = torch.randn(16, device=device)
    m = torch.randn(4, 4, device=device)
    one = torch.zeros(1, device=device)
    return {
        "add (16)": lambda: a + b,
        "mul_ in place (16)": lambda: a.mul_(1.0),
        "sum (16)": lambda: a.sum(),
        "relu (16)": lambda: torch.relu(a),
        "mm (4x4)": lambda: m @ m,
        "view + transpose (4x4)": lambda: m.view(16).view(4, 4).t(),
        "zeros (16)": lambda: torch.zeros(16, device=device),
        # Reading back waits for the device: a sleep and a wake-up there would cost more than the work.
        "item after add_ (1)": lambda: one.add_(1.0).item(),
    }


def large_cases(device: str) -> dict:
    """name -> (function, bytes or flops moved per call, unit)."""
    n = 1 << 23
    x = torch.randn(n, device=device)
    y = torch.randn(n, device=device)
    matrix = torch.randn(1024, 1024, device=device)
    images = torch.randn(16, 32, 56, 56, device=device)
    weight = torch.randn(64, 32, 3, 3, device=device)
    activations = torch.randn(32, 32, 32, 32, device=device)  # bench/training.py's CNN, first pooling
    features = torch.randn(8, 64, 32, 32, device=device)  # a U-Net decoder's feature map
    rows = torch.randn(4096, 1024, device=device)
    table = torch.randn(50_000, 256, device=device)
    tokens = torch.randint(0, 50_000, (16_384,), device=device)
    index = torch.randint(0, 4096, (4096, 1024), device=device)
    source = torch.randn(4096, 1024, device=device)
    sequences = torch.randn(32, 64, 256, device=device)  # scanned along the middle dimension (1 KiB stride)
    row_index = torch.randint(0, 1024, (4096, 1024), device=device)
    ones = torch.ones((), device=device).expand(8, 16, 64, 64)  # the gradient of .sum(), broadcast
    optimizer, optimizer_bytes = adamw_over_transformer_weights(device)
    attention_step, attention_flops = causal_attention_forward_and_backward(device)
    return {
        "add 8M (GB/s)": (lambda: x + y, 3 * 4 * n / 1e9),
        "mul_ in place 8M (GB/s)": (lambda: x.mul_(1.0000001), 2 * 4 * n / 1e9),
        "sum 8M (GB/s)": (lambda: x.sum(), 4 * n / 1e9),
        "clone 8M (GB/s)": (lambda: x.clone(), 2 * 4 * n / 1e9),
        "matmul 1024 (GFLOP/s)": (lambda: matrix @ matrix, 2 * 1024**3 / 1e9),
        "conv2d 3x3 (GFLOP/s)": (lambda: F.conv2d(images, weight, padding=1),
                                 2 * 16 * 64 * 56 * 56 * 32 * 9 / 1e9),
        "max_pool2d 2x2 32x32x32x32 (GB/s)": (lambda: F.max_pool2d(activations, 2), 4 * activations.numel() / 1e9),
        "max_pool2d 3x3/2 16x32x56x56 (GB/s)": (lambda: F.max_pool2d(images, 3, 2, 1), 4 * images.numel() / 1e9),
        "avg_pool2d 2x2 32x32x32x32 (GB/s)": (lambda: F.avg_pool2d(activations, 2), 4 * activations.numel() / 1e9),
        "upsample nearest 2x 8x64x32x32 (GB/s)": (lambda: F.interpolate(features, scale_factor=2),
                                                  4 * 4 * features.numel() / 1e9),
        "softmax 4096x1024 (GB/s)": (lambda: torch.softmax(rows, dim=-1), 2 * 4 * rows.numel() / 1e9),
        "layer_norm 4096x1024 (GB/s)": (lambda: F.layer_norm(rows, (1024,)), 2 * 4 * rows.numel() / 1e9),
        "var along rows 4096x1024 (GB/s)": (lambda: rows.var(-1), 4 * rows.numel() / 1e9),
        "embedding 16k x 256 (GB/s)": (lambda: F.embedding(tokens, table), 2 * 4 * 16_384 * 256 / 1e9),
        "gather 4096x1024 (GB/s)": (lambda: torch.gather(source, 0, index), 3 * 4 * source.numel() / 1e9),
        "scatter_add_ 4096x1024 (GB/s)": (lambda: rows.scatter_add_(0, index, source), 3 * 4 * source.numel() / 1e9),
        "gather along rows 4096x1024 (GB/s)": (lambda: torch.gather(source, 1, row_index),
                                               3 * 4 * source.numel() / 1e9),
        "bicubic 2x backward, broadcast gradient (GB/s)": (
            lambda: torch.ops.aten.upsample_bicubic2d_backward(ones, [64, 64], [8, 16, 32, 32], False, 2.0, 2.0),
            4 * (ones.numel() + 8 * 16 * 32 * 32) / 1e9),  # read the gradient, write the input's gradient
        "cumsum dim 1 32x64x256 (GB/s)": (lambda: torch.cumsum(sequences, 1), 2 * 4 * sequences.numel() / 1e9),
        "cummax dim 1 32x64x256 (GB/s)": (lambda: torch.cummax(sequences, 1), 4 * 4 * sequences.numel() / 1e9),
        "rfft 4096x1024 (GB/s)": (lambda: torch.fft.rfft(rows), (4 + 8 * 513 / 1024) * rows.numel() / 1e9),
        "index_select 4096 rows (GB/s)": (lambda: rows.index_select(0, tokens[:4096] % 4096),
                                          2 * 4 * 4096 * 1024 / 1e9),
        "randn 1M (GB/s)": (lambda: torch.randn(1 << 20, device=device), 4 * (1 << 20) / 1e9),
        "rand 1M (GB/s)": (lambda: torch.rand(1 << 20, device=device), 4 * (1 << 20) / 1e9),
        "randint 1M (GB/s)": (lambda: torch.randint(0, 100, (1 << 20,), device=device), 8 * (1 << 20) / 1e9),
        "dropout 8M (GB/s)": (lambda: F.dropout(x, 0.1, training=True), 2 * 4 * n / 1e9),
        "AdamW step 3.2M params (GB/s)": (optimizer.step, optimizer_bytes / 1e9),
        "causal attention fwd+bwd 8x4x128x64 (GFLOP/s)": (attention_step, attention_flops / 1e9),
    }


def adamw_over_transformer_weights(device: str):
    """AdamW with PyTorch's default implementation for `device` (foreach on axon, the per-tensor loop on the
    CPU) over the weights of 4 transformer layers of width 256 (48 tensors), with gradients set; and the bytes
    one step reads and writes (parameter, first and second moment read and written, gradient read)."""
    layer = [(768, 256), (768,), (256, 256), (256,), (1024, 256), (1024,), (256, 1024), (256,), (256,), (256,),
             (256,), (256,)]
    params = [torch.randn(shape, device=device, requires_grad=True) for _ in range(4) for shape in layer]
    for param in params:
        param.grad = torch.randn_like(param)
    optimizer = torch.optim.AdamW(params, lr=1e-4)
    return optimizer, 7 * 4 * sum(param.numel() for param in params)


def causal_attention_forward_and_backward(device: str):
    """scaled_dot_product_attention with a causal mask at bench/training.py's GPT sizes (batch 8, 4 heads,
    128 tokens, 64 per head), forward and backward; and its nominal work: the seven matrix products of a
    forward (scores, output) and a backward (scores again, and the four gradients' products), each
    2·B·H·L²·D flops, halved for the mask."""
    batch, heads, length, size = 8, 4, 128, 64
    q, k, v = (torch.randn(batch, heads, length, size, device=device, requires_grad=True) for _ in range(3))
    grad = torch.randn(batch, heads, length, size, device=device)

    def step():
        q.grad = k.grad = v.grad = None
        F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(grad)

    return step, 7 * 2 * batch * heads * length * length * size / 2


def measure(device: str) -> dict[str, float]:
    """Seconds per call of every case on `device` (this process)."""
    torch.manual_seed(0)
    measurements = {name: seconds_per_call(function, device) for name, function in tiny_cases(device).items()}
    for name, (function, _) in large_cases(device).items():
        measurements[name] = seconds_per_call(function, device)
    return measurements


def main() -> int:
    device = device_argument()
    if device is not None:
        report_and_exit(measure(device))
    times = in_fresh_processes(__file__)
    cpu, axon = times["cpu"], times["axon"]
    rows = [(name, cpu[name] * 1e6, axon[name] * 1e6) for name in tiny_cases("cpu")]
    print_table("Tiny tensors: time per call (target axon/cpu <= 1.2)", rows, "us", "axon/cpu")
    rows = [(name, work / cpu[name], work / axon[name]) for name, (_, work) in large_cases("cpu").items()]
    print_table("Large tensors: throughput (target axon/cpu >= 0.95)", rows, "rate", "axon/cpu")
    return 0


if __name__ == "__main__":
    sys.exit(main())
