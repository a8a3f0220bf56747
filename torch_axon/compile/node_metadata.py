"""What the FX graph recorded about a node, read in this one place and handed to its lowering explicitly.

Lowerings (lowering/) never read `node.meta`: the caller (lowering/graph.py for
a real lowering, partition.py for a trial one) builds the node's `NodeFacts`
and passes them through `LoweringContext.call`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.fx


@dataclass(frozen=True)
class NodeFacts:
    target: object             # the node's op
    output: object             # fake value of its result for this call, concrete shapes: a tensor, or a tuple
    user_op: object            # the op the user called (decompositions record it), else `target`
    traced_arguments: tuple    # node.args, each graph node replaced by its traced fake value (real strides)


def facts_for(node: torch.fx.Node, output) -> NodeFacts:
    traced = torch.fx.node.map_arg(node.args, lambda argument: argument.meta.get("val"))
    return NodeFacts(node.target, output, node.meta.get("original_aten") or node.target, tuple(traced))
