"""Training steps after CPU work in the program's thread: a checkpoint loaded, or batches prepared each step.

    python bench/cpu_batches.py [--models mlp,cnn,gpt]

Two programs per model, each a training step of forward, loss, backward and AdamW:
- `checkpoint`: the model's weights are loaded on the CPU with `load_state_dict` (a parallel CPU copy, as
  loading any pretrained model runs) before `.to(device)`; the batch is made once.
- `cpu batches`: each step takes the next batch of a dataset held on the CPU (uint8 images or features,
  int32 tokens), converts it there (normalizing the MLP's 128x512 and the CNN's 32x3x32x32 batches is a
  parallel CPU operator) and moves it to the device.
The CPU and axon run in processes of their own, alternating (timing.in_fresh_processes). The axon process
also runs each program with the release of the program thread's OpenMP team turned off
(host_execution/program_thread_teams.h says why it exists). Reported: ms per step, CPU time / axon time,
and axon's time without the release / with it.
"""

from __future__ import annotations

import argparse
import warnings

import torch
from timing import in_fresh_processes, measure_or_compare, seconds_per_call
from torch import nn
from training import TinyGPT, cnn, gpt, mlp

warnings.simplefilter("ignore")
MODELS = {"mlp": mlp, "cnn": cnn, "gpt": gpt}
DATASET_BATCHES = 16
PROGRAMS = ("checkpoint", "cpu batches")


def _models() -> list[str]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="mlp,cnn,gpt")
    parser.add_argument("--device")
    return parser.parse_args().models.split(",")


def step_function(model_name: str, program: str, device: str):
    torch.manual_seed(0)
    model, (inputs,), target = MODELS[model_name]()
    is_gpt = isinstance(model, TinyGPT)
    if program == "checkpoint":
        checkpoint = {name: value.clone() for name, value in model.state_dict().items()}
        model.load_state_dict(checkpoint)
    model = model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    generator = torch.Generator().manual_seed(0)
    batch = inputs.shape[0]
    if is_gpt:
        dataset = torch.randint(0, 256, (DATASET_BATCHES * batch, *inputs.shape[1:]), dtype=torch.int32,
                                generator=generator)
    else:
        dataset = torch.randint(0, 256, (DATASET_BATCHES * batch, *inputs.shape[1:]), dtype=torch.uint8,
                                generator=generator)
    targets = target.repeat(DATASET_BATCHES, *([1] * (target.dim() - 1)))
    fixed = (inputs.to(device), target.to(device))
    position = 0

    def next_batch():
        nonlocal position
        if program == "checkpoint":
            return fixed
        rows = slice(position * batch, (position + 1) * batch)
        position = (position + 1) % DATASET_BATCHES
        if is_gpt:
            x = dataset[rows].long().to(device)
            return x, x.roll(-1, dims=1)
        return ((dataset[rows].float() - 127.5) / 64.0).to(device), targets[rows].to(device)

    def step():
        x, y = next_batch()
        optimizer.zero_grad(set_to_none=True)
        loss = model(x, y)[1] if is_gpt else nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()

    return step


def measure_device(device: str) -> dict[str, float]:
    times = {}
    for model_name in _models():
        for program in PROGRAMS:
            key = f"{model_name} {program}"
            times[key] = seconds_per_call(step_function(model_name, program, device), device, min_time=1.0)
            if device == "axon":
                from torch_axon import _C

                _C._testing.set_program_thread_team_releases_enabled(False)
                times[f"{key} without release"] = seconds_per_call(step_function(model_name, program, device),
                                                                   device, min_time=1.0)
                _C._testing.set_program_thread_team_releases_enabled(True)
    return times


def compare() -> int:
    models = _models()
    times = in_fresh_processes(__file__, arguments=("--models", ",".join(models)))
    cpu, axon = times["cpu"], times["axon"]
    print(f"{'model, program':<20}{'cpu ms':>10}{'axon ms':>10}{'axon ms, no release':>22}{'cpu/axon':>10}"
          f"{'no release/release':>20}")
    for name in models:
        for program in PROGRAMS:
            key = f"{name} {program}"
            without = axon[f"{key} without release"]
            print(f"{key:<20}{cpu[key] * 1e3:>10.2f}{axon[key] * 1e3:>10.2f}{without * 1e3:>22.2f}"
                  f"{cpu[key] / axon[key]:>10.2f}{without / axon[key]:>20.2f}", flush=True)
    return 0


if __name__ == "__main__":
    measure_or_compare(measure_device, compare)
