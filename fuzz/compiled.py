"""The compile path: a program's pure-functional part through torch.compile(backend="axon").

From a program, the inputs are its `make(...)` tensors on D0 and the body is
every later statement marked functional (no mutation, no streams, no host
round trip, on D0), or in place / out= on D0's default stream, whose operands
are inputs or body results. The body
becomes `def fn(inputs): ...; return results`, run eagerly on the CPU and
compiled on axon; dtypes, shapes and values must agree (values within a
tolerance that allows XLA's own rounding and its own transcendental
functions; strides are not compared, compiled graphs choose their layouts).
"""

from __future__ import annotations

import re
import warnings

import torch

from . import prelude
from .execution import Failure, Verdict
from .program import Program, Statement

# In-place and out= labels the compile path may trace (deterministic ones; see fuzz/ops/mutation.py).
MUTATIONS = {"add_", "sub_", "mul_", "div_", "copy_", "maximum_", "addcmul_", "lerp_", "bitwise_xor_",
             "logical_xor_", "setitem", "masked_fill_", "clamp_", "neg_", "abs_", "zero_", "fill_", "exp_", "floor_",
             "sigmoid_", "relu_", "square_", "index_add_", "index_fill_", "scatter_add_", "index_put_",
             "masked_scatter_", "index_copy_", "add.out", "mul.out", "sub.out", "maximum.out", "abs.out", "neg.out",
             "exp.out", "clamp.out", "sum.out", "cumsum.out", "where.out", "mm.out", "cat.out", "index_select.out",
             "logical_xor.out", "sort.out", "mean.out"}


def traceable(statement: Statement) -> bool:
    """Functional, or an in-place / out= statement on D0's default stream (functionalization's job)."""
    if statement.functional:
        return True
    accesses = [effect for effect in statement.effects if effect[0] in ("read", "write", "new")]
    return (statement.stream is None and not statement.sync and statement.label in MUTATIONS
            and all(effect[2] == "default0" for effect in accesses))


def functional_part(program: Program) -> tuple[list[int], list[int], list[str]]:
    """(input statement indices, body statement indices, output names); empty body if nothing qualifies.

    The outputs are the body's results and the inputs it writes in place.
    """
    inputs, body, available, written = [], [], set(), []
    for index, statement in enumerate(program.statements):
        if statement.expects_error:
            break
        defined_on_d0 = all(program.devices.get(name, 0) == 0 for name in statement.defines)
        if statement.label == "make" and statement.stream is None and defined_on_d0:
            inputs.append(index)
            available.update(statement.defines)
        elif traceable(statement) and set(statement.uses) <= available:
            body.append(index)
            available.update(statement.defines)
            written += [effect[1] for effect in statement.effects if effect[0] == "write"]
    outputs = [name for index in body for name in program.statements[index].defines]
    parameters = {name for index in inputs for name in program.statements[index].defines}
    outputs += [name for name in dict.fromkeys(written) if name in parameters]
    return inputs, body, outputs


def source(program: Program, inputs: list[int], body: list[int], outputs: list[str]) -> str:
    parameters = ", ".join(name for index in inputs for name in program.statements[index].defines)
    lines = [f"def fn({parameters}):"] + [f"    {program.statements[index].code}" for index in body]
    lines.append(f"    return ({', '.join(outputs)},)")
    return "\n".join(lines)


def _inputs(program: Program, inputs: list[int], device_type: str) -> list[torch.Tensor]:
    namespace = prelude.bindings(device_type)
    values = []
    for index in inputs:
        statement = program.statements[index]
        exec(compile(statement.code, "<input>", "exec"), namespace)  # noqa: S102  generated code
        values += [namespace[name] for name in statement.defines]
    return values


def check_compiled(program: Program) -> Verdict:
    """Compiles the functional part on axon and compares it with eager CPU; no failure if there is no body."""
    inputs, body, outputs = functional_part(program)
    if not body:
        return Verdict(None, "compile: no functional part")
    text = source(program, inputs, body, outputs)
    functions = {}
    for device_type in ("cpu", "axon"):  # `D0` inside the body is the device of its run
        namespace = prelude.bindings(device_type)
        exec(compile(text, "<fuzz fn>", "exec"), namespace)  # noqa: S102  generated code
        functions[device_type] = namespace["fn"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = functions["cpu"](*_inputs(program, inputs, "cpu"))
        torch._dynamo.reset()
        try:
            # Every third seed compiles with dynamic shapes; each compiled function runs twice (the
            # second call reuses the executable).
            compiled = torch.compile(functions["axon"], backend="axon", dynamic=program.seed % 3 == 0 or None)
            first = compiled(*_inputs(program, inputs, "axon"))
            actual = compiled(*_inputs(program, inputs, "axon"))
            torch.axon.synchronize()
        except Exception as error:  # noqa: BLE001  the exception is the result
            error = getattr(error, "inner_exception", None) or error  # BackendCompilerFailed wraps the cause
            message = str(error).strip().splitlines()[0][:400] if str(error).strip() else ""
            reference = _reference_error(functions["cpu"], _inputs(program, inputs, "cpu"))
            if reference is not None:  # PyTorch's own compile stack refuses it too: not axon's
                return Verdict(None, f"compile: refused by aot_eager on the CPU too ({reference})")
            # The label names the error (digits blanked) so that minimization keeps to this one.
            label = f"compile:{type(error).__name__}: {re.sub(r'[0-9]+', 'N', message)[:70]}"
            return Verdict(Failure("compile error", body[-1], label, message))
        finally:
            torch._dynamo.reset()
    defined = program.defining_index()
    tolerance = prelude.compile_tolerance([*expected, *_inputs(program, inputs, "cpu")])
    for verdict in (_compare(program, outputs, first, expected, defined, "first call", tolerance),
                    _compare(program, outputs, actual, expected, defined, "second call", tolerance)):
        if verdict is not None:
            reference = _reference_outputs(functions["cpu"], _inputs(program, inputs, "cpu"))
            if reference is not None and _compare(program, outputs, reference, expected, defined, "aot_eager",
                                                  tolerance) is not None:
                return Verdict(None, "compile: aot_eager on the CPU differs from eager too")
            return verdict
    return Verdict(None, f"compile: {len(body)} statements, {len(outputs)} outputs", compared=len(outputs))


def _reference_outputs(function, inputs):
    """What torch.compile(backend="aot_eager") returns on the CPU (moved to axon to compare), or None if it raises."""
    torch._dynamo.reset()
    try:
        return [output.to("axon") for output in torch.compile(function, backend="aot_eager")(*inputs)]
    except Exception:  # noqa: BLE001
        return None
    finally:
        torch._dynamo.reset()


def _reference_error(function, inputs) -> str | None:
    """The error torch.compile(backend="aot_eager") raises on the CPU for the same function, if any."""
    torch._dynamo.reset()
    try:
        torch.compile(function, backend="aot_eager")(*inputs)
    except Exception as error:  # noqa: BLE001
        error = getattr(error, "inner_exception", None) or error
        return type(error).__name__
    finally:
        torch._dynamo.reset()
    return None


def _compare(program, outputs, actual, expected, defined, call, tolerance) -> Verdict | None:
    for name, got, want in zip(outputs, actual, expected):
        index = defined[name]
        label = program.statements[index].label
        if not isinstance(got, torch.Tensor) or got.device.type != "axon":
            where = got.device if isinstance(got, torch.Tensor) else type(got).__name__
            return Verdict(Failure("compiled device", index, label, f"{name}: {where}, expected axon"))
        if got.dtype != want.dtype:
            return Verdict(Failure("compiled dtype", index, label, f"{name}: axon {got.dtype}, CPU {want.dtype}"))
        if got.shape != want.shape:
            return Verdict(Failure("compiled shape", index, label,
                                   f"{name}: axon {tuple(got.shape)}, CPU {tuple(want.shape)}"))
        on_host = got.detach().cpu().resolve_conj().resolve_neg()
        if not prelude.values_close(on_host, want.resolve_conj().resolve_neg(), tolerance=tolerance):
            return Verdict(Failure("compiled values", index, label,
                                   f"{name} ({call}): {prelude._value_difference(on_host, want.resolve_conj())}"))
    return None


def reproducer(program: Program, headline: str = "") -> str:
    """A standalone script for a compile-path failure: exit status 1 while compiled axon differs from CPU eager."""
    inputs, body, outputs = functional_part(program)
    names = [name for index in inputs for name in program.statements[index].defines]
    make_lines = [f"    {program.statements[index].code}" for index in inputs]
    header = [f"# Axon fuzz reproducer (compile path): seed {program.seed}, {len(body)} statements"
              f"{f' ({program.origin})' if program.origin else ''}."]
    header += [f"# {line}" for line in headline.splitlines()]
    header.append("# Run: .venv/bin/python <this file>  (exit status 1 while compiled axon differs from CPU eager)")
    main = f'''
def inputs(D0):
{chr(10).join(make_lines) or "    pass"}
    return [{", ".join(names)}]


{source(program, inputs, body, outputs).replace("def fn(", "def fn(", 1)}


if __name__ == "__main__":
    import sys

    D0 = "cpu"
    expected = fn(*inputs("cpu"))
    D0 = "axon:0"
    actual = torch.compile(fn, backend="axon"{", dynamic=True" if program.seed % 3 == 0 else ""})(*inputs("axon:0"))
    failed = 0
    tolerance = compile_tolerance([*expected, *inputs("cpu")])
    for index, (got, want) in enumerate(zip(actual, expected)):
        got = got.cpu()
        same = got.dtype == want.dtype and got.shape == want.shape and values_close(
            got.resolve_conj(), want.resolve_conj(), tolerance=tolerance)
        if not same:
            failed += 1
            print(f"output {{index}}: axon {{got.dtype}} {{tuple(got.shape)}} {{got.flatten()[:8].tolist()}}; "
                  f"CPU {{want.dtype}} {{tuple(want.shape)}} {{want.flatten()[:8].tolist()}}")
    print(f"{{failed}} output(s) differ" if failed else "compiled axon matches CPU eager")
    sys.exit(1 if failed else 0)
'''
    from .program import PRELUDE_PATH
    return "\n".join([*header, "", PRELUDE_PATH.read_text().strip(), "", main.strip(), ""])
