"""Copies across devices (axon:0 <-> axon:1, device <-> host, non_blocking with pinned memory), numbers
read back to Python, factories on a device, `del` (allocator reuse) and stream traffic."""

from __future__ import annotations

import torch

from ..ordering import HOST
from ..proposal import Proposal
from .common import fresh


def across_devices(g):
    x = g.pick(pred=lambda name, _: g.devices[name] is not None)
    if x is None:
        return None
    source = g.devices[x]
    target = 1 - source
    name = fresh(g)
    if g.rng.random() < 0.6:
        blocking = "" if g.rng.random() < 0.5 else "non_blocking=True, "
        dtype = f"dtype={g.random_dtype()}, " if g.rng.random() < 0.25 else ""
        code = f"{name} = {x}.to(D{target}, {dtype}{blocking}copy=True)"
        defines = {name: target}
        if dtype and g.value(x).is_floating_point() and not g.is_exact(x):
            return None  # a cast to an integer dtype needs exact values
    else:
        tensor = g.value(x)
        y = g.pick(target, pred=lambda _, t: t.shape == tensor.shape or (
            t.dim() >= tensor.dim() and tuple(t.shape[t.dim() - tensor.dim():]) == tuple(tensor.shape)))
        if y is None:
            return None
        return Proposal(f"{y}.copy_({x})", "copy.device_to_device", reads=(x,), writes=(y,), functional=False,
                        custom_effects=lambda current: [("read", x, current(source)), ("write", y, current(target))])
    return Proposal(code, "copy.device_to_device", defines, reads=(x,), functional=False,
                    custom_effects=lambda current: [("read", x, current(source)), ("new", name, current(target))])


def to_host(g):
    x = g.pick(pred=lambda name, _: g.devices[name] is not None)
    if x is None:
        return None
    device = g.devices[x]
    tensor = g.value(x)
    name = g.fresh("h")
    if g.rng.random() < 0.6:
        shape = ", ".join(map(str, tensor.shape)) or "()"
        code = (f"{name} = torch.empty({shape}, dtype={tensor.dtype}, pin_memory=PIN); "
                f"{name}.copy_({x}, non_blocking=True)")
        # The copy writes host memory from the device's stream: reading it needs a synchronize.
        return Proposal(code, "copy.device_to_pinned", {name: None}, reads=(x,), functional=False,
                        custom_effects=lambda current: [("new", name, HOST), ("read", x, current(device)),
                                                        ("write", name, current(device))])
    return Proposal(f'{name} = {x}.to("cpu", copy=True)', "copy.device_to_host", {name: None}, reads=(x,),
                    functional=False, host_sync=True, stream_ok=g.rng.random() < 0.5,
                    custom_effects=lambda current: [("read", x, current(device)), ("host_sync", current(device)),
                                                    ("new", name, HOST)])


def to_device(g):
    h = g.pick(None)
    if h is None:
        return None
    device = 0 if g.rng.random() < 0.7 else 1
    name = fresh(g)
    if g.rng.random() < 0.6:
        code = f"{name} = {h}.to(D{device}, non_blocking=True, copy=True)"
        return Proposal(code, "copy.host_to_device", {name: device}, reads=(h,), functional=False,
                        custom_effects=lambda current: [("read", h, current(device)), ("new", name, current(device))])
    code = f"{name} = {h}.to(D{device}, copy=True)"
    return Proposal(code, "copy.host_to_device", {name: device}, reads=(h,), functional=False, host_sync=True,
                    custom_effects=lambda current: [("read", h, current(device)), ("new", name, current(device)),
                                                    ("host_sync", current(device))])


def number(g):
    x = g.pick(exact=True, pred=lambda _, t: 0 < t.numel() <= 24)
    if x is None:
        return None
    device = g.devices[x]
    name = g.fresh("n")
    # A half-precision sum may overflow differently on the two devices: read its max instead.
    low_precision = g.value(x).dtype in (torch.float16, torch.bfloat16)
    reduced = "{x}.max().item()" if low_precision else "{x}.sum().item()"
    form = g.rng.choice(("{x}.tolist()", "{x}.flatten()[0].item()", reduced, "bool({x}.any())"))
    if device is None:
        return Proposal(f"{name} = {form.format(x=x)}", "item", reads=(x,), numbers=(name,), functional=False)
    return Proposal(f"{name} = {form.format(x=x)}", "item", reads=(x,), numbers=(name,), functional=False,
                    host_sync=True)


def factory(g):
    device = g.random_device()
    dtype = g.random_dtype()
    shape = g.random_shape()
    text = ", ".join(map(str, shape)) or "()"
    where = g.device_text(device)
    name = fresh(g)
    forms = [f"torch.zeros({text}, dtype={dtype}, device={where})",
             f"torch.ones({text}, dtype={dtype}, device={where})",
             f"torch.full(({text},), 2, dtype={dtype}, device={where})" if shape else
             f"torch.full((), 3, dtype={dtype}, device={where})",
             f"torch.arange({g.rng.randint(0, 7)}, dtype={dtype}, device={where})",
             f"torch.eye({g.rng.randint(1, 4)}, dtype={dtype}, device={where})",
             f"torch.linspace(-1, 1, {g.rng.randint(1, 6)}, device={where})"]
    x = g.pick(device)
    if x is not None:
        forms += [f"torch.zeros_like({x})", f"torch.full_like({x}, 2)", f"torch.ones_like({x}, dtype={dtype})"]
    code = g.rng.choice(forms)
    return Proposal(f"{name} = {code}", "factory", {name: device}, exact="linspace" not in code)


def delete(g):
    x = g.pick()
    if x is None or len(g.tensors()) < 3:
        return None
    return Proposal(f"del {x}", "del", functional=False, stream_ok=False,
                    custom_effects=lambda current: [("del", x)])


def stream_traffic(g):
    """Synchronization that no access needs: more streams, waits and synchronizes, as real programs have."""
    if g.stream_rate == 0:
        return None
    streams = [name for name in g.stream_devices if not name.startswith("default")]
    if len(streams) < 2 and g.rng.random() < 0.5:
        g.new_stream(g.rng.choice((0, 0, 1)))
        return None
    everything = list(g.stream_devices)
    waiter, waitee = g.rng.choice(everything), g.rng.choice(everything)
    if waiter != waitee:
        g.synchronize_after(waiter if g.rng.random() < 0.85 else "host", waitee)
    return None


BUILDERS = ((2, across_devices), (2, to_host), (1.5, to_device), (1, number), (2, factory), (3, delete),
            (2, stream_traffic))
