"""Training-step benchmarks: one step of an MLP, a small CNN, a small GPT and a 2-layer LSTM classifier.

Each trains with AdamW; the MLP also with SGD's fused step (`fused=True`), which runs as one operator
per step (`_fused_sgd_`). A Transformer encoder layer's step also reads its loss back (`loss.item()`), as a
training loop that logs its loss does: there the program waits for each step in that read, not in a
synchronize.

    python bench/training.py

Each model trains from identical (seed-0) weights on the CPU and on axon, each device in processes of its
own, alternating (timing.in_fresh_processes says why); prints the best of two median step times of each and
the ratio (target axon/cpu <= 1.10; issue 14's eager goal for the GPT step: <= 0.9).
"""

from __future__ import annotations

import pathlib
import sys

import torch
from timing import device_argument, in_fresh_processes, print_table, report_and_exit, seconds_per_call
from torch import nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
from tiny_gpt import TinyGPT  # noqa: E402


def mlp():
    model = nn.Sequential(nn.Linear(512, 1024), nn.GELU(), nn.Linear(1024, 1024), nn.GELU(), nn.Linear(1024, 10))
    return model, (torch.randn(128, 512),), torch.randint(0, 10, (128,))


def cnn():
    model = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 8 * 8, 10))
    return model, (torch.randn(32, 3, 32, 32),), torch.randint(0, 10, (32,))


def pooled_cnn():
    """Convolution, ReLU and max pooling twice, no batch norm: the shape of PyTorch's CIFAR-10 tutorial network."""
    model = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 8 * 8, 128), nn.ReLU(), nn.Linear(128, 10))
    return model, (torch.randn(64, 3, 32, 32),), torch.randint(0, 10, (64,))


class SequenceClassifier(nn.Module):
    """A 2-layer LSTM (or another recurrent layer) over a sequence, classified from its last step."""

    def __init__(self, recurrent_layer=nn.LSTM):
        super().__init__()
        self.rnn = recurrent_layer(256, 512, num_layers=2, batch_first=True)
        self.head = nn.Linear(512, 10)

    def forward(self, x):
        return self.head(self.rnn(x)[0][:, -1])


def lstm():
    return SequenceClassifier(), (torch.randn(16, 64, 256),), torch.randint(0, 10, (16,))


def gru():
    return SequenceClassifier(nn.GRU), (torch.randn(16, 64, 256),), torch.randint(0, 10, (16,))


class EncoderClassifier(nn.Module):
    """One `nn.TransformerEncoderLayer` (width 128, 4 heads, dropout 0.1), its outputs averaged and classified."""

    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(128, 4, 256, batch_first=True)
        self.head = nn.Linear(128, 10)

    def forward(self, x):
        return self.head(self.layer(x).mean(1))


def encoder_layer():
    return EncoderClassifier(), (torch.randn(8, 64, 128),), torch.randint(0, 10, (8,))


def gpt():
    model = TinyGPT(vocab=256, context=128, width=256, heads=4, layers=4)
    return model, (torch.randint(0, 256, (8, 128)),), torch.randint(0, 256, (8, 128))


OPTIMIZERS = {
    "adamw": lambda parameters: torch.optim.AdamW(parameters, lr=1e-4),
    "sgd fused": lambda parameters: torch.optim.SGD(parameters, lr=1e-3, momentum=0.9, fused=True),
}


def step_function(model: nn.Module, inputs, target, device: str, optimizer_name: str = "adamw",
                  read_loss: bool = False):
    model = model.to(device)
    inputs = tuple(t.to(device) for t in inputs)
    target = target.to(device)
    optimizer = OPTIMIZERS[optimizer_name](model.parameters())
    is_gpt = isinstance(model, TinyGPT)

    def step():
        optimizer.zero_grad(set_to_none=True)
        if is_gpt:
            _, loss = model(inputs[0], target)
        else:
            loss = nn.functional.cross_entropy(model(*inputs), target)
        loss.backward()
        optimizer.step()
        if read_loss:
            loss.item()

    return step


# (row, model factory, optimizer, read the loss back each step)
CASES = (("MLP step (ms)", mlp, "adamw", False), ("MLP step, SGD fused=True (ms)", mlp, "sgd fused", False),
         ("CNN step (ms)", cnn, "adamw", False), ("GPT step (ms)", gpt, "adamw", False),
         ("LSTM step (ms)", lstm, "adamw", False), ("GRU step (ms)", gru, "adamw", False),
         ("encoder layer step, loss.item() (ms)", encoder_layer, "adamw", True))


def measure(device: str) -> dict[str, float]:
    """Seconds per training step of each model on `device` (this process), from seed-0 weights."""
    times = {}
    for name, factory, optimizer_name, read_loss in CASES:
        torch.manual_seed(0)
        model, inputs, target = factory()
        step = step_function(model, inputs, target, device, optimizer_name, read_loss)
        times[name] = seconds_per_call(step, device, min_time=1.0)
    return times


def main() -> int:
    device = device_argument()
    if device is not None:
        report_and_exit(measure(device))
    times = in_fresh_processes(__file__)
    rows = [(name, times["cpu"][name] * 1e3, times["axon"][name] * 1e3) for name, *_ in CASES]
    print_table("Training steps: time per step (target axon/cpu <= 1.10)", rows, "ms", "axon/cpu")
    return 0


if __name__ == "__main__":
    sys.exit(main())
