"""The op families a program is drawn from, one file each, with their weights.

Each builder takes the generator and returns a `Proposal` (or None when
nothing live fits); builders may first emit the statements their operands
need (a tensor of a given shape, an index tensor).
"""

from __future__ import annotations

from . import elementwise, errors, indexing, joining, linear_algebra, mutation, reductions, transfers, views

FAMILIES = (elementwise, reductions, linear_algebra, views, mutation, indexing, joining, transfers)
BUILDERS = tuple(entry for family in FAMILIES for entry in family.BUILDERS)


def choose(rng):
    return rng.choices([builder for _, builder in BUILDERS], [weight for weight, _ in BUILDERS])[0]


def choose_error(rng):
    return rng.choices([builder for _, builder in errors.BUILDERS], [weight for weight, _ in errors.BUILDERS])[0]
