"""torch.compile(backend="axon"): runs the declared pipeline (pipeline.py) on each graph Dynamo captures.

`torch_axon.compile.pipeline.listing()` lists its stages. Set AXON_COMPILE_DUMP=<dir> to write every stage
(dump.py).
"""

from __future__ import annotations

import itertools

import torch

from . import stage
from .decompositions import decompositions
from .options import CompileOptions
from .pipeline import PIPELINE

_graph_counter = itertools.count()

__all__ = ["axon_backend", "decompositions"]


def axon_backend(graph_module: torch.fx.GraphModule, example_inputs, mode=None, options=None):
    job = stage.Job(CompileOptions.from_dynamo(mode, options), f"graph_{next(_graph_counter)}", PIPELINE)
    return stage.run(job, stage.DYNAMO, stage.GraphAndInputs(graph_module, example_inputs))["aot_autograd"]
