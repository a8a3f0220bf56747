"""ATen → StableHLO lowering: the op table (registry), one module per op family."""

# Importing each op family registers its lowerings in the table.
from . import (  # noqa: F401
    convolution,
    creation,
    distance,
    elementwise,
    histogram,
    indexing,
    linear_algebra,
    normalization,
    pooling,
    reduction,
    sampling,
    shape,
    sorting,
    spectral,
)
from .builder import LoweringError, Value
from .graph import LoweredGraph, lower_graph, propagate_shapes
from .registry import LOWERINGS, lowering_for, lowers

__all__ = ["LOWERINGS", "LoweredGraph", "LoweringError", "Value", "lower_graph", "lowering_for", "lowers",
           "propagate_shapes"]
