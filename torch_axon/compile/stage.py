"""One stage of the compile pipeline, and the one loop every stage runs in.

A `Stage` is a name, the scope that runs it and a function from the previous
stage's result to its own. `run` is the only place stages are called: it times
each one into the graph's report record and writes its dump, so a stage added
to the declaration (pipeline.py) is timed and dumped without further code.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from . import dump

# Scopes: which call runs a stage, from the outermost loop in.
DYNAMO = "dynamo"                  # once per graph Dynamo captures
GRAPH = "graph"                    # per ATen graph AOTAutograd hands over (forward, backward, inference)
SPECIALIZATION = "specialization"  # per lowered partition and concrete input shapes, at its first call


class GraphAndInputs(NamedTuple):
    """What the Dynamo and specialization scopes start from: a graph and the inputs it is compiled for."""

    graph_module: Any
    inputs: Any


@dataclasses.dataclass(frozen=True)
class Stage:
    name: str
    scope: str
    run: Callable[[Any, Job], Any]
    # (file extension, contents) of the stage's result for AXON_COMPILE_DUMP, or None when there is none to write.
    dump: Callable[[Any, Job], tuple[str, str | bytes] | None] | None = None
    summary: str = ""


@dataclasses.dataclass(frozen=True)
class Job:
    """Everything a stage may need besides its input: carried down from scope to scope."""

    options: Any                       # CompileOptions
    graph: str                         # graph name, also the dump folder (graph_0, graph_0_forward, ...)
    pipeline: tuple[Stage, ...]
    record: Any = None                 # report.GraphRecord the stages are timed into (none in the Dynamo scope)
    label: str | None = None           # dump file stem of a specialization: "<partition>_<shape key>"
    device: int | None = None          # the axon device a specialization is compiled for
    # Whether the graph's run-time checks may be reported in stream order (compiled_partition.py): running the
    # graph changes no input's data, inside it or after it, so a failed check leaves nothing changed to undo.
    checks_in_stream_order: bool = False

    def replace(self, **changes) -> Job:
        return dataclasses.replace(self, **changes)


def dump_name(job: Job, stage: Stage, extension: str) -> str:
    """<NN>_<stem><extension>: NN counts the dumping stages in declaration order, so the files sort as the
    pipeline runs; the stem is the stage's name, or the specialization's label."""
    number = [s.name for s in job.pipeline if s.dump is not None].index(stage.name)
    return f"{number:02d}_{job.label or stage.name}{extension}"


def run(job: Job, scope: str, artifact) -> dict[str, Any]:
    """Runs the stages of `scope` in declaration order, each on the previous one's result; returns every
    stage's result by name."""
    results = {}
    for stage in job.pipeline:
        if stage.scope != scope:
            continue
        start = time.perf_counter()
        artifact = stage.run(artifact, job)
        if job.record is not None:
            job.record.stage_seconds[stage.name] += time.perf_counter() - start
        results[stage.name] = artifact
        _dump(job, stage, artifact)
    return results


def _dump(job: Job, stage: Stage, artifact) -> None:
    # Only with a dump directory: producing the contents can cost (serializing an executable).
    if stage.dump is None or not job.options.dump_dir:
        return
    written = stage.dump(artifact, job)
    if written is not None:
        extension, contents = written
        dump.dump(job.options.dump_dir, job.graph, dump_name(job, stage, extension), contents)
