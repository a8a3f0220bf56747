"""FX passes between AOTAutograd and partitioning.

- Functionalization leftovers: `alias` / `detach` / `lift_fresh_copy` nodes are
  value identities after functionalization; dropping them keeps partitions
  from being cut at bookkeeping nodes.
- RNG stays explicit and reproducible by construction: random ops
  (nondeterministic_seeded) are never lowered, so they run on axon's Philox
  generator in stream order, exactly as in eager mode (see partition.py).
- dtype policy: lowerings accumulate float16/bfloat16 reductions, softmax and
  normalization statistics in float32, as PyTorch's CPU kernels do.
"""

from __future__ import annotations

import torch
import torch.fx

aten = torch.ops.aten

_IDENTITIES = (aten.alias.default, aten.detach.default, aten.lift_fresh_copy.default)


def remove_identities(graph_module: torch.fx.GraphModule) -> int:
    removed = 0
    for node in list(graph_module.graph.nodes):
        if node.op == "call_function" and node.target in _IDENTITIES:
            source = node.args[0]
            # Outputs must stay distinct tensors when AOTAutograd expects an alias there.
            if any(user.op == "output" for user in node.users):
                continue
            node.replace_all_uses_with(source)
            graph_module.graph.erase_node(node)
            removed += 1
    if removed:
        graph_module.graph.lint()
        graph_module.recompile()
    return removed


def run_all(graph_module: torch.fx.GraphModule) -> None:
    remove_identities(graph_module)
