"""What a fuzz program runs against, and how two runs of it are compared.

A program is plain PyTorch code over five names: `D0` and `D1` (its two
devices), `S` (the stream API), `PIN` (whether host buffers are pinned) and
`make` (seeded input data). The CPU run binds `D0 = D1 = "cpu"`, `S = HostStreams`
(streams and events that order nothing: the CPU is synchronous) and
`PIN = False`; the axon run binds `axon:0`, `axon:1`, `AxonStreams` and `PIN = True`.

This file is copied verbatim to the top of every reproducer, so it imports
nothing but torch and stays short.
"""

import contextlib

import torch


def make(shape, dtype, device, seed, low=-4, high=5):
    """A tensor of integers drawn from [low, high) (seeded, on the CPU) as `dtype`, moved to `device`."""
    generator = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        values = torch.randint(0, 2, shape, generator=generator).bool()
    elif dtype.is_complex:
        real = torch.randint(low, high, shape, generator=generator)
        values = torch.complex(real.double(), torch.randint(low, high, shape, generator=generator).double())
    else:
        values = torch.randint(low, high, shape, generator=generator)
    return values.to(dtype).to(device)


def make_normal(shape, dtype, device, seed):
    """Normally distributed values (seeded, on the CPU) as `dtype`, moved to `device`."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype).to(device)


class HostStreams:
    """Stands in for torch.axon in the CPU run: every stream and event call is a no-op."""

    class Stream:
        def __init__(self, device=None, priority=0):
            pass

        def wait_event(self, event):
            pass

        def wait_stream(self, stream):
            pass

        def synchronize(self):
            pass

    class Event:
        def __init__(self, device=None):
            pass

        def record(self, stream=None):
            pass

        def synchronize(self):
            pass

    def default_stream(device=None):
        return HostStreams.Stream()

    def stream(stream):
        return contextlib.nullcontext()

    def synchronize(device=None):
        pass

    def record_stream(tensor, stream):
        pass


class AxonStreams:
    """torch.axon's streams and events, with record_stream as a function so one text runs on both."""

    def Stream(device=None, priority=0):
        return torch.axon.Stream(device, priority=priority)

    def Event(device=None):
        return torch.axon.Event(device=device)

    def default_stream(device=None):
        return torch.axon.default_stream(device)

    def stream(stream):
        return torch.axon.stream(stream)

    def synchronize(device=None):
        torch.axon.synchronize(device)

    def record_stream(tensor, stream):
        tensor.record_stream(stream)


def bindings(device_type):
    """The names a program runs against on `device_type` ("cpu" or "axon")."""
    if device_type == "cpu":
        return {"torch": torch, "make": make, "make_normal": make_normal, "D0": "cpu", "D1": "cpu",
                "S": HostStreams, "PIN": False}
    return {"torch": torch, "make": make, "make_normal": make_normal, "D0": "axon:0", "D1": "axon:1",
            "S": AxonStreams, "PIN": True}


# Unit roundoff of each floating dtype; values compare within TOLERANCE_ULPS of it,
# relative to the element and to the tensor's largest finite magnitude.
EPSILON = {torch.float16: 2.0**-10, torch.bfloat16: 2.0**-7, torch.float32: 2.0**-23, torch.float64: 2.0**-52,
           torch.complex32: 2.0**-10, torch.complex64: 2.0**-23, torch.complex128: 2.0**-52}
TOLERANCE_ULPS = 16


# Compiled graphs fuse, reorder and have their own exp/tanh/...: a relative tolerance per dtype, and a
# function's outputs all get the loosest one among its tensors' dtypes (a float64 result computed from a
# float32 intermediate carries float32 rounding).
COMPILE_TOLERANCE = {torch.float16: 2.0**-10 * 32, torch.bfloat16: 2.0**-7 * 16, torch.float32: 2.0**-23 * 1024,
                     torch.complex64: 2.0**-23 * 1024, torch.float64: 2.0**-52 * 2**20,
                     torch.complex128: 2.0**-52 * 2**20}


def compile_tolerance(tensors):
    return max([COMPILE_TOLERANCE.get(tensor.dtype, 0.0) for tensor in tensors] + [0.0])


def values_close(actual, expected, ulps=TOLERANCE_ULPS, tolerance=None):
    """Exact for integers and bool; for floats, equal specials (nan, inf) and finite values within
    `ulps` units of roundoff (or a given relative `tolerance`)."""
    if expected.dtype not in EPSILON:
        return torch.equal(actual, expected)
    relative = EPSILON[expected.dtype] * ulps if tolerance is None else max(tolerance, EPSILON[expected.dtype])
    wide = torch.complex128 if expected.dtype.is_complex else torch.float64
    actual, expected = actual.to(wide), expected.to(wide)
    finite = torch.isfinite(expected)
    scale = max(1.0, float(expected[finite].abs().max())) if bool(finite.any()) else 1.0
    allowed = relative * (expected.abs() + scale)
    within = finite & torch.isfinite(actual) & ((actual - expected).abs() <= allowed)
    same_special = (actual == expected) | (torch.isnan(actual) & torch.isnan(expected))
    return bool((within | same_special).all())


def _layout(tensor):
    """Strides that matter: dimensions of size 1 have no stride to speak of."""
    return tuple(stride for size, stride in zip(tensor.shape, tensor.stride()) if size != 1)


def differences(cpu, axon, devices, ulps=TOLERANCE_ULPS, check_layout=True):
    """What differs between two runs' live values: a list of (name, aspect, detail).

    `cpu` and `axon` map names to values; `devices` maps each tensor name to the
    device index it must be on in the axon run (None: the host).
    """
    found = []
    for name, expected in cpu.items():
        if name not in axon:
            found.append((name, "missing", "not defined in the axon run"))
            continue
        actual = axon[name]
        if not isinstance(expected, torch.Tensor):
            same = actual == expected or (expected != expected and actual != actual)
            if type(actual) is not type(expected) or not same:
                found.append((name, "value", f"axon {actual!r}, CPU {expected!r}"))
            continue
        if not isinstance(actual, torch.Tensor):
            found.append((name, "type", f"axon {type(actual).__name__}, CPU a tensor"))
            continue
        index = devices.get(name)
        wanted = torch.device("cpu") if index is None else torch.device("axon", index)
        if actual.device != wanted:
            found.append((name, "device", f"axon run {actual.device}, expected {wanted}"))
            continue
        if actual.dtype != expected.dtype:
            found.append((name, "dtype", f"axon {actual.dtype}, CPU {expected.dtype}"))
            continue
        if actual.shape != expected.shape:
            found.append((name, "shape", f"axon {tuple(actual.shape)}, CPU {tuple(expected.shape)}"))
            continue
        if check_layout and expected.numel() > 1 and _layout(actual) != _layout(expected):
            found.append((name, "strides", f"axon {actual.stride()}, CPU {expected.stride()} "
                                           f"(shape {tuple(expected.shape)})"))
            continue
        if check_layout and expected.numel() > 0 and actual.storage_offset() != expected.storage_offset():
            found.append((name, "storage_offset", f"axon {actual.storage_offset()}, CPU {expected.storage_offset()}"))
            continue
        if actual.is_conj() != expected.is_conj() or actual.is_neg() != expected.is_neg():
            found.append((name, "conj/neg bit", f"axon {actual.is_conj()}/{actual.is_neg()}, "
                                                f"CPU {expected.is_conj()}/{expected.is_neg()}"))
            continue
        on_host = actual.detach().to("cpu", copy=True).resolve_conj().resolve_neg()
        if not values_close(on_host, expected.detach().resolve_conj().resolve_neg(), ulps):
            found.append((name, "values", _value_difference(on_host, expected)))
    if check_layout:
        found += _aliasing_differences(cpu, axon)
    return found


def _value_difference(actual, expected):
    if expected.numel() <= 12:
        return f"axon {actual.tolist()}, CPU {expected.tolist()}"
    wide = torch.complex128 if expected.dtype.is_complex else torch.float64
    delta = (actual.to(wide) - expected.to(wide)).abs()
    delta = torch.where(torch.isnan(delta), torch.full_like(delta, float("inf")), delta)
    worst = int(delta.flatten().argmax())
    return (f"{int((delta > 0).sum())} of {expected.numel()} elements differ; at flat index {worst}: "
            f"axon {actual.flatten()[worst].item()!r}, CPU {expected.flatten()[worst].item()!r}")


def _aliasing_differences(cpu, axon):
    """Names that share memory in one run must share it in the other."""
    def groups(values):
        by_storage = {}
        for name, value in values.items():
            if isinstance(value, torch.Tensor) and value.untyped_storage().nbytes() > 0:
                by_storage.setdefault(value.untyped_storage().data_ptr(), []).append(name)
        return {name: tuple(group) for group in by_storage.values() for name in group}

    cpu_groups, axon_groups = groups(cpu), groups({k: v for k, v in axon.items() if k in cpu})
    return [(name, "aliasing", f"axon shares memory with {axon_groups.get(name, (name,))}, CPU with {group}")
            for name, group in cpu_groups.items() if axon_groups.get(name, (name,)) != group]
