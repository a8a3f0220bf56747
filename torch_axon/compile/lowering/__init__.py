"""ATen → StableHLO lowering: the op table (registry), one module per op family."""

from . import (convolution, creation, distance, elementwise, indexing, linear_algebra, normalization,  # noqa: F401
               pooling, reduction, sampling, shape, sorting, spectral)  # (registrations)
from .builder import LoweringError, Value
from .graph import LoweredGraph, lower_graph, propagate_shapes
from .registry import LOWERINGS, lowering_for, lowers

__all__ = ["LOWERINGS", "LoweredGraph", "LoweringError", "Value", "lower_graph", "lowering_for", "lowers",
           "propagate_shapes"]
