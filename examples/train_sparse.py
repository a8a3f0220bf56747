"""Sparse models on `axon` next to the CPU: a graph network and a recommender.

    python examples/train_sparse.py [--steps 40] [--model gnn|recommender|both]

- gnn: a two-layer graph convolutional network classifies the nodes of a
  generated graph (communities joined by random edges). Messages pass with
  torch.sparse.mm over the normalized adjacency in CSR, which lives in axon
  memory; Adam trains it.
- recommender: users and items as nn.EmbeddingBag(sparse=True) tables whose
  sparse gradients SparseAdam applies, a dense tower on top trained by Adam,
  on generated click data.

Each model trains on the CPU and on axon from the same weights and batches;
the job prints both losses, the time per step and exits non-zero if they
differ by more than --tolerance.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import torch

# PyTorch's notice that CSR support is in beta, given on the CPU as on axon.
warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")


def community_graph(nodes: int, communities: int, seed: int = 0):
    """A random graph whose node features and labels follow its communities."""
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, communities, (nodes,), generator=generator)
    sources = torch.randint(0, nodes, (nodes * 8,), generator=generator)
    targets = torch.randint(0, nodes, (nodes * 8,), generator=generator)
    same = labels[sources] == labels[targets]
    keep = same | (torch.rand(len(sources), generator=generator) < 0.1)  # mostly within communities
    edges = torch.cat([torch.stack([sources[keep], targets[keep]]), torch.arange(nodes).repeat(2, 1)], dim=1)
    adjacency = torch.sparse_coo_tensor(edges, torch.ones(edges.shape[1]), (nodes, nodes),
                                        check_invariants=True).coalesce()
    adjacency = torch.sparse_coo_tensor(adjacency.indices(), torch.ones(adjacency._nnz()), (nodes, nodes),
                                        check_invariants=True)
    degree = torch.sparse.sum(adjacency, dim=1).to_dense()
    scale = degree.pow(-0.5)
    indices = adjacency.coalesce().indices()
    normalized = torch.sparse_coo_tensor(indices, scale[indices[0]] * scale[indices[1]], (nodes, nodes),
                                         check_invariants=True)
    features = torch.nn.functional.one_hot(labels, communities).float() + 0.8 * torch.randn(
        nodes, communities, generator=generator)
    features = torch.cat([features, torch.randn(nodes, 12, generator=generator)], dim=1)
    return normalized.to_sparse_csr(), features, labels


class GraphConvolutionalNetwork(torch.nn.Module):
    def __init__(self, features: int, hidden: int, classes: int):
        super().__init__()
        self.first = torch.nn.Linear(features, hidden)
        self.second = torch.nn.Linear(hidden, classes)

    def forward(self, adjacency: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
        hidden = torch.relu(torch.sparse.mm(adjacency, self.first(features)))
        return torch.sparse.mm(adjacency, self.second(hidden))


def train_gnn(device: str, steps: int) -> tuple[list[float], float]:
    adjacency, features, labels = community_graph(nodes=600, communities=4)
    adjacency, features, labels = adjacency.to(device), features.to(device), labels.to(device)
    torch.manual_seed(0)
    model = GraphConvolutionalNetwork(features.shape[1], 32, 4).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    return fit(device, steps, lambda step: torch.nn.functional.cross_entropy(model(adjacency, features), labels),
               optimizer)


class Recommender(torch.nn.Module):
    def __init__(self, users: int, items: int, width: int):
        super().__init__()
        self.users = torch.nn.EmbeddingBag(users, width, mode="mean", sparse=True)
        self.items = torch.nn.EmbeddingBag(items, width, mode="sum", sparse=True)
        self.tower = torch.nn.Sequential(torch.nn.Linear(2 * width, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))

    def forward(self, users, user_offsets, items, item_offsets):
        joined = torch.cat([self.users(users, user_offsets), self.items(items, item_offsets)], dim=1)
        return self.tower(joined).squeeze(-1)


def click_batches(steps: int, batch: int, users: int, items: int, seed: int = 1):
    """Each example: one user, a bag of 1-5 items, a click label that depends on both."""
    generator = torch.Generator().manual_seed(seed)
    taste = torch.randn(users, generator=generator)
    appeal = torch.randn(items, generator=generator)
    for _ in range(steps):
        user = torch.randint(0, users, (batch,), generator=generator)
        bag_sizes = torch.randint(1, 6, (batch,), generator=generator)
        item = torch.randint(0, items, (int(bag_sizes.sum()),), generator=generator)
        offsets = torch.cat([torch.zeros(1, dtype=torch.long), bag_sizes.cumsum(0)[:-1]])
        bag_appeal = torch.zeros(batch).index_add_(0, torch.repeat_interleave(torch.arange(batch), bag_sizes),
                                                   appeal[item])
        label = (taste[user] + bag_appeal / bag_sizes > 0).float()
        yield user, torch.arange(batch), item, offsets, label


def train_recommender(device: str, steps: int) -> tuple[list[float], float]:
    torch.manual_seed(0)
    model = Recommender(users=500, items=2000, width=16).to(device)
    sparse = torch.optim.SparseAdam([*model.users.parameters(), *model.items.parameters()], lr=0.05)
    dense = torch.optim.Adam(model.tower.parameters(), lr=0.01)
    batches = [[t.to(device) for t in batch] for batch in click_batches(steps, 256, 500, 2000)]

    class BothOptimizers:
        def zero_grad(self):
            sparse.zero_grad()
            dense.zero_grad()

        def step(self):
            sparse.step()
            dense.step()

    def loss(step):
        user, user_offsets, item, item_offsets, label = batches[step]
        logits = model(user, user_offsets, item, item_offsets)
        return torch.nn.functional.binary_cross_entropy_with_logits(logits, label)

    return fit(device, steps, loss, BothOptimizers())


def fit(device: str, steps: int, loss_of_step, optimizer) -> tuple[list[float], float]:
    losses = []
    start = time.perf_counter()
    for step in range(steps):
        if step == 1:  # the first step warms caches on both devices
            torch.accelerator.synchronize() if device != "cpu" else None
            start = time.perf_counter()
        optimizer.zero_grad()
        loss = loss_of_step(step)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    losses = [float(loss) for loss in losses]  # one synchronization at the end
    return losses, (time.perf_counter() - start) * 1000 / max(1, steps - 1)


MODELS = {"gnn": train_gnn, "recommender": train_recommender}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--model", choices=[*MODELS, "both"], default="both")
    parser.add_argument("--tolerance", type=float, default=1e-3)
    args = parser.parse_args()
    torch.axon.reset_fallback_ops()
    failed = False
    for name in MODELS if args.model == "both" else [args.model]:
        cpu_losses, cpu_ms = MODELS[name]("cpu", args.steps)
        axon_losses, axon_ms = MODELS[name]("axon", args.steps)
        print(f"{name}: {args.steps} steps, CPU {cpu_ms:.1f} ms/step, axon {axon_ms:.1f} ms/step")
        for step in sorted({0, args.steps // 2, args.steps - 1}):
            print(f"  step {step:3d}  loss cpu {cpu_losses[step]:.5f}  axon {axon_losses[step]:.5f}")
        difference = max(abs(a - c) for a, c in zip(axon_losses, cpu_losses))
        print(f"  largest loss difference {difference:.2e} (tolerance {args.tolerance:g})")
        failed |= difference > args.tolerance
    fallbacks = torch.axon.fallback_ops()
    print(f"operators that fell back to the CPU: {fallbacks or 'none'}")
    return 1 if failed or fallbacks else 0


if __name__ == "__main__":
    sys.exit(main())
