"""Which activations of an axon graph Inductor lays out channels-last.

Inductor's layout optimization (graph.py's `find_nodes_prefer_channels_last`) makes convolutions' inputs and
results channels-last and propagates that forward only up to the graph's last convolution: behind it, a vision
transformer's tokens are better contiguous. In a CNN the last convolution's batch norm, activation and pooling
come behind it, so its activation was transposed to contiguous as it was computed, on the larger side of the
pooling (a ReLU over 32×64×16×16 floats, 0.36-0.42 ms against 0.05 without the transposition), and its gradient
transposed back in the backward. Axon's pooling and batch norm kernels take either layout (extern_operators.py),
so in axon graphs channels-last also flows from a channels-last node into its elementwise users and into those
operators; the first operator that is neither (a flattening view, a product) takes its input as it takes any.
"""

from __future__ import annotations

import functools
import operator

import torch

from .extern_operators import takes_either_layout
from .routing import _axon_devices


def _passes_channels_last_on(node) -> bool:
    """`node` keeps a channels-last input's layout in its result without a transposition."""
    target = node.target
    if target is operator.getitem:
        return True
    return isinstance(target, torch._ops.OpOverload) and (
        torch.Tag.pointwise in target.tags or takes_either_layout(target))


def _with_channels_last_past_the_last_convolution(find):
    @functools.wraps(find)
    def find_nodes(self):
        preferred = find(self)
        if not preferred or not _axon_devices(self.module, ()):
            return preferred
        for node in self.module.graph.nodes:  # in order: a node's users come after it
            if node in preferred:
                preferred.update(user for user in node.users if _passes_channels_last_on(user))
        return preferred

    find_nodes._axon_layouts = True
    return find_nodes


def install_channels_last_activations() -> None:
    """Wraps Inductor's choice of channels-last nodes (idempotent)."""
    from torch._inductor.graph import GraphLowering

    if not getattr(GraphLowering.find_nodes_prefer_channels_last, "_axon_layouts", False):
        GraphLowering.find_nodes_prefer_channels_last = _with_channels_last_past_the_last_convolution(
            GraphLowering.find_nodes_prefer_channels_last)
