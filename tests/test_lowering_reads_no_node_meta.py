"""Lowerings get their output's shape and dtype explicitly (LoweringContext.call hands them the node's
NodeFacts), so no module of the lowering package reads FX node metadata: a source check."""

from __future__ import annotations

import pathlib
import re

import torch_axon.compile.lowering as lowering_package


def test_no_lowering_module_reads_node_meta():
    folder = pathlib.Path(lowering_package.__file__).parent
    readers = [f"{path.name}:{number}: {line.strip()}" for path in sorted(folder.glob("*.py"))
               for number, line in enumerate(path.read_text().splitlines(), 1) if re.search(r"\.meta\b", line)]
    assert not readers, "\n".join(readers)
