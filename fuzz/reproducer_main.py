"""The end of every reproducer (below the marker): run `program` on both devices and compare.

It uses the prelude's names and the reproducer's `program` and `DEVICES`;
the import and stand-ins above the marker only let this file be linted.
"""

from fuzz.prelude import bindings, differences, torch  # noqa: F401

DEVICES: dict = {}


def program(D0, D1, S, PIN):  # replaced by the reproducer's program
    return {}


# --- reproducer ---
import sys  # noqa: E402
import traceback  # noqa: E402


def run(device_type):
    """(live values, None) or (None, (exception type, message, where it was raised))."""
    names = bindings(device_type)
    try:
        values = program(names["D0"], names["D1"], names["S"], names["PIN"])
        if device_type == "axon":
            for index in range(torch.axon.device_count()):
                torch.axon.synchronize(index)
        return {k: v for k, v in values.items() if k[0] in "thn"}, None  # tensors, host tensors, numbers
    except Exception as error:  # noqa: BLE001  the exception is the result
        frames = [frame for frame in traceback.extract_tb(error.__traceback__) if frame.name == "program"]
        where = f"at `{frames[-1].line}`" if frames else "at the final synchronize"
        return None, (type(error).__name__, str(error).strip().splitlines()[0] if str(error).strip() else "", where)


if __name__ == "__main__":
    # The axon run repeats (a race may need several tries); the first run that differs is reported.
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    cpu, cpu_error = run("cpu")
    for attempt in range(repeats):
        axon, axon_error = run("axon")
        if cpu_error or axon_error:
            same = cpu_error and axon_error and cpu_error[0] == axon_error[0]
            if same and attempt < repeats - 1:
                continue
            for device_type, error in (("CPU", cpu_error), ("axon", axon_error)):
                print(f"{device_type}: " + (f"{error[0]} {error[2]}: {error[1][:300]}" if error else "no error"))
            sys.exit(0 if same else 1)
        found = differences(cpu, axon, DEVICES)
        if found or attempt == repeats - 1:
            for name, aspect, detail in found:
                print(f"{name}: {aspect}: {detail}")
            print(f"{len(found)} difference(s) in axon run {attempt + 1}" if found
                  else f"axon matches the CPU ({repeats} runs)")
            sys.exit(1 if found else 0)
