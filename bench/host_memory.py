"""Host memory under many distinct tensor shapes: axon against the CPU.

Each new call shape makes the generic kernel run the operator once on CPU
stand-ins (shape_inference.h). This measures that such work keeps the
process's host memory bounded: the growth of RSS, less the device memory the
caching allocator reserves (the emulated device's memory is host memory too),
over N distinct sizes of 4-8 MiB, next to the same loop on CPU tensors.

    .venv/bin/python bench/host_memory.py [--shapes 3000]
"""

import argparse
import os
import subprocess
import sys

LOOP = """
import os, sys, torch
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
device, shapes = sys.argv[1], int(sys.argv[2])
torch.ones(1000, device=device).exp().sum().item()
start = rss()
for i in range(shapes):
    n = (1 << 20) + (i * 1048573) % (1 << 20)   # 4-8 MiB of float32, all distinct
    a = torch.ones(n, device=device)
    b = a.exp()
    c = b.sum()
    if i % 64 == 0:
        c.item()
c.item()
reserved = torch.axon.memory_reserved() if device == "axon" else 0
print((rss() - start - reserved) / 2**20)
"""


def growth(device: str, shapes: int) -> float:
    output = subprocess.run([sys.executable, "-c", LOOP, device, str(shapes)], capture_output=True, text=True,
                            check=True, env=dict(os.environ))
    return float(output.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", type=int, default=3000)
    args = parser.parse_args()
    cpu = growth("cpu", args.shapes)
    axon = growth("axon", args.shapes)
    print(f"{args.shapes} distinct shapes: host memory growth cpu {cpu:.1f} MiB, axon {axon:.1f} MiB "
          f"(axon excludes the device memory its caching allocator reserves)")


if __name__ == "__main__":
    main()
