"""Stage dumps: AXON_COMPILE_DUMP=<dir> (or options={"dump_dir": ...}) writes every stage of every graph.

Layout: <dir>/<graph>/<NN>_<stage>.<ext>, for example
  graph_0/00_dynamo.py, graph_0_forward/01_aten.py, graph_0_forward/02_partitioned.py,
  graph_0_forward/03_fused_0_<shape key>.stablehlo.mlir, .../04_fused_0_<shape key>.<image format>
  (the driver's compiled image of that executable, as the disk cache keeps it; the emulated
  driver's is XLA:CPU's serialized program, format xla-cpu-executable).
NN counts the stages that dump, in the order pipeline.PIPELINE declares them; stage.run writes the files.
"""

from __future__ import annotations

import os


def dump(directory: str | None, graph: str, stage: str, contents: str | bytes) -> None:
    if not directory:
        return
    folder = os.path.join(directory, graph)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, stage), "wb" if isinstance(contents, bytes) else "w") as stream:
        stream.write(contents)


def graph_code(graph_module) -> str:
    return graph_module.print_readable(print_output=False, include_stride=True, include_device=True)
