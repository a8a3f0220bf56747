"""Random programs from a seed.

The generator runs every statement it proposes on the CPU as it goes (the
"shadow" run), so it knows each tensor's shape, dtype, layout and values, and
whether the CPU accepts the statement. A statement the CPU rejects is dropped,
except for the program's last statement, which ends about a third of the
programs on purpose with an error the CPU raises.

Two pieces of bookkeeping keep programs meaningful:
- Stream ordering (`ordering.py`): before a statement is kept, the accesses it
  makes are checked against the ordering model, and the synchronization a
  correct CUDA program would need (an event wait, `wait_stream`, a host
  synchronize, `record_stream` before `del`) is inserted first.
- Exactness: a floating tensor is *exact* while its values are integers that
  its dtype represents exactly and it came from operations that are exact on
  such values (additions, products, maxima, copies, views...). Operations that
  are discontinuous (comparisons, rounding, casts to integers, arg-reductions,
  sorting, modulo) only get exact inputs, so a rounding difference between two
  correct implementations can never turn into a different integer.
"""

from __future__ import annotations

import copy
import random
import re
import warnings

import torch

from . import ops, prelude
from .ordering import HOST, Hazard, StreamOrder, default_stream
from .program import Program, Statement
from .proposal import Proposal

DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int64, torch.int32, torch.bool,
          torch.complex64)
DTYPE_WEIGHTS = (6, 1.5, 1.5, 1, 2.5, 1, 1, 1)
EXACT_LIMIT = {torch.float16: 2048, torch.bfloat16: 256, torch.float32: 2**24, torch.float64: 2**53,
               torch.complex32: 2048, torch.complex64: 2**24, torch.complex128: 2**53}
ANY = object()
NAME = re.compile(r"\b([thnse]\d+)\b")


def is_float(dtype: torch.dtype) -> bool:
    return dtype.is_floating_point or dtype.is_complex


def exact_values(tensor: torch.Tensor) -> bool:
    """Integers within the range the dtype represents exactly (always true for integer dtypes)."""
    if not is_float(tensor.dtype) or tensor.numel() == 0:
        return True
    values = tensor.detach().resolve_conj().resolve_neg()
    values = torch.view_as_real(values) if values.is_complex() else values
    values = values.double()
    limit = EXACT_LIMIT.get(tensor.dtype)  # a dtype without one (float8) is not taken as exact
    return limit is not None and bool(torch.isfinite(values).all()) and bool((values == values.round()).all()) \
        and float(values.abs().max()) <= limit


class ProgramGenerator:
    def __init__(self, seed: int, length: int):
        self.seed = seed
        self.rng = random.Random(seed)
        self.length = length
        self.statements: list[Statement] = []
        self.devices: dict[str, int | None] = {}
        self.shadow = prelude.bindings("cpu")
        self.order = StreamOrder()
        self.exact_storage: dict[int, bool] = {}
        self.reinterpreted: set[str] = set()
        self.stream_devices: dict[str, int] = {default_stream(0): 0, default_stream(1): 1}
        self.event_devices: dict[str, int] = {}
        self.counters: dict[str, int] = {}
        self.seeds = 0
        # Per program, so some programs are stream-heavy and others use none.
        self.stream_rate = self.rng.choice((0.0, 0.15, 0.35, 0.6))
        self.second_device_rate = self.rng.choice((0.0, 0.1, 0.3))

    # -- names and values ------------------------------------------------------------

    def fresh(self, prefix: str) -> str:
        self.counters[prefix] = self.counters.get(prefix, -1) + 1
        return f"{prefix}{self.counters[prefix]}"

    def new_seed(self) -> int:
        self.seeds += 1
        return self.seed * 1000 + self.seeds

    def value(self, name: str) -> torch.Tensor:
        return self.shadow[name]

    def tensors(self, device=ANY, pred=None) -> list[str]:
        names = [name for name, index in self.devices.items() if name in self.shadow and (
            device is ANY or index == device)]
        return [name for name in names if pred is None or pred(name, self.shadow[name])]

    def is_exact(self, name: str) -> bool:
        tensor = self.shadow[name]
        if not is_float(tensor.dtype):
            return True
        return self.exact_storage.get(self.order.storage_of.get(name), False) and name not in self.reinterpreted

    def pick(self, device=ANY, exact: bool | None = None, pred=None) -> str | None:
        """A live tensor, mostly a recent one; None if nothing fits."""
        names = self.tensors(device, pred)
        if exact:
            names = [name for name in names if self.is_exact(name)]
        if not names:
            return None
        if self.rng.random() < 0.6:
            names = names[-6:]
        return self.rng.choice(names)

    def device_text(self, device: int | None) -> str:
        return '"cpu"' if device is None else f"D{device}"

    def random_device(self) -> int | None:
        if self.rng.random() < 0.03:
            return None
        return 1 if self.rng.random() < self.second_device_rate else 0

    def random_dtype(self) -> torch.dtype:
        return self.rng.choices(DTYPES, DTYPE_WEIGHTS)[0]

    def random_shape(self, ndim: int | None = None) -> tuple[int, ...]:
        if ndim is None and self.rng.random() < 0.02:  # large enough for ATen's parallel loops and big blocks
            return self.rng.choice(((300, 257), (70001,), (3, 129, 130), (40000, 2)))
        ndim = self.rng.choice((0, 1, 2, 2, 2, 3, 3, 4)) if ndim is None else ndim
        sizes = (0, 1, 1, 2, 3, 3, 4, 5, 6) if self.rng.random() < 0.08 else (1, 2, 3, 3, 4, 5, 6)
        return tuple(self.rng.choice(sizes) for _ in range(ndim))

    # -- creating inputs --------------------------------------------------------------

    def create(self, shape, dtype: torch.dtype, device: int | None, normal: bool = False, low=None,
               high=None) -> str:
        """Emits `tN = make(...)`: seeded values made on the host and copied to `device`."""
        name = self.fresh("t")
        shape_text = repr(tuple(shape))
        if normal and is_float(dtype) and not dtype.is_complex:
            code = f"{name} = make_normal({shape_text}, {dtype}, {self.device_text(device)}, {self.new_seed()})"
        else:
            bounds = "" if low is None else f", low={low}, high={high}"
            code = f"{name} = make({shape_text}, {dtype}, {self.device_text(device)}, {self.new_seed()}{bounds})"
        kept = self.attempt(Proposal(code, "make", defines={name: device}, stream_ok=False))
        assert kept, code
        return name

    def require(self, shape, device: int | None, dtype: torch.dtype | None = None, exact: bool = False) -> str:
        """A live tensor of this shape (and dtype) on `device`, creating one if there is none."""
        shape = tuple(shape)
        name = self.pick(device, exact or None, lambda _, t: tuple(t.shape) == shape and (
            dtype is None or t.dtype == dtype))
        if name is None or self.rng.random() < 0.3:
            name = self.create(shape, dtype or self.random_dtype(), device)
        return name

    def evaluate(self, expression: str):
        """The CPU value of an expression over live names (None if the CPU rejects it)."""
        try:
            return eval(compile(expression, "<fuzz>", "eval"), self.shadow)  # noqa: S307  generated code
        except Exception:  # noqa: BLE001
            return None

    def index_tensor(self, shape, high: int, device: int | None, low: int = 0) -> str:
        return self.create(shape, torch.int64, device, low=low, high=max(high, low + 1))

    # -- streams --------------------------------------------------------------------------

    def reference(self, stream: str) -> str:
        """The Python expression naming a stream id."""
        if stream.startswith("default"):
            return f"S.default_stream(D{stream[len('default'):]})"
        return stream

    def new_stream(self, device: int) -> str:
        name = self.fresh("s")
        priority = self.rng.choice(("", "", ", priority=-1"))
        self.emit(f"{name} = S.Stream(D{device}{priority})", "stream.new", (("stream", name, device),),
                  defines=(name,))
        self.stream_devices[name] = device
        return name

    def event_on(self, device: int) -> str:
        existing = [name for name, index in self.event_devices.items() if index == device]
        if existing and self.rng.random() < 0.6:
            return self.rng.choice(existing)
        name = self.fresh("e")
        self.emit(f"{name} = S.Event(device=D{device})", "event.new", (("event", name),), defines=(name,))
        self.event_devices[name] = device
        return name

    def choose_context(self, proposal: Proposal, devices: set) -> str | None:
        if not proposal.stream_ok or self.rng.random() >= self.stream_rate:
            return None
        device = self.rng.choice(sorted(d for d in devices if d is not None) or [0])
        side = [name for name, index in self.stream_devices.items()
                if not name.startswith("default") and (index == device or self.rng.random() < 0.2)]
        if not side or self.rng.random() < 0.15:
            return self.new_stream(device)
        return self.rng.choice(side)

    def synchronize_after(self, observer: str, stream: str) -> None:
        """Emits what orders `observer` (a stream or the host) after the work queued so far on `stream`."""
        device = self.stream_devices[stream]
        choice = self.rng.random()
        if observer == HOST:
            if choice < 0.4:
                self.emit(f"{self.reference(stream)}.synchronize()", "stream.synchronize",
                          (("host_sync", stream),), sync=True)
            elif choice < 0.7:
                self.emit(f"S.synchronize(D{device})", "device.synchronize", (("host_sync_device", device),),
                          sync=True)
            else:
                event = self.event_on(device)
                self.emit(f"{event}.record({self.reference(stream)})", "event.record", (("record", event, stream),))
                self.emit(f"{event}.synchronize()", "event.synchronize", (("host_sync_event", event),), sync=True)
        elif choice < 0.45:
            self.emit(f"{self.reference(observer)}.wait_stream({self.reference(stream)})", "stream.wait_stream",
                      (("wait_stream", observer, stream),))
        elif choice < 0.92:
            event = self.event_on(device)
            self.emit(f"{event}.record({self.reference(stream)})", "event.record", (("record", event, stream),))
            self.emit(f"{self.reference(observer)}.wait_event({event})", "stream.wait_event",
                      (("wait_event", observer, event),))
        else:
            self.emit(f"{self.reference(stream)}.synchronize()", "stream.synchronize", (("host_sync", stream),),
                      sync=True)

    def fix(self, hazard: Hazard) -> None:
        if hazard.observer is None:  # freeing memory other streams still use
            stream = hazard.streams[0]
            owner = self.order.storages[self.order.storage_of[hazard.name]].allocated_on
            if self.rng.random() < 0.75:
                self.emit(f"S.record_stream({hazard.name}, {self.reference(stream)})", "record_stream",
                          (("record_stream", hazard.name, stream),))
            else:
                self.synchronize_after(owner, stream)
            return
        if not hazard.streams:
            raise AssertionError(f"unfixable hazard: {hazard}")
        self.synchronize_after(hazard.observer, hazard.streams[0])

    def prepare(self, effects) -> StreamOrder:
        """The ordering model after `effects`, first emitting the synchronization they need (not committed)."""
        for _ in range(16):
            trial = copy.deepcopy(self.order)
            try:
                trial.apply(effects)
            except Hazard as hazard:
                self.fix(hazard)
                continue
            return trial
        raise AssertionError(f"could not order {effects}")

    def ordered(self, effects) -> None:
        self.order = self.prepare(effects)

    # -- statements ----------------------------------------------------------------------

    def uses(self, line: str, defines) -> tuple[str, ...]:
        found = dict.fromkeys(NAME.findall(line))
        return tuple(name for name in found if name not in defines and name in self.shadow)

    def emit(self, code: str, label: str, effects, defines=(), sync: bool = False) -> None:
        """Appends a statement that cannot fail (stream and event bookkeeping, synchronization)."""
        self.ordered(effects)
        uses = self.uses(code, defines)
        exec(compile(code, "<fuzz>", "exec"), self.shadow)  # noqa: S102  generated code
        self.statements.append(Statement(code, label, tuple(defines), uses, tuple(effects), sync=sync))

    def attempt(self, proposal: Proposal, keep_error: bool = False) -> bool:
        """Runs the proposal on the CPU; keeps it if the CPU accepts it (or, with keep_error, if it raises)."""
        involved = {self.devices[name] for name in proposal.reads + proposal.writes if name in self.devices}
        involved |= set(proposal.defines.values())
        context = self.choose_context(proposal, involved)
        line = Statement(proposal.code, proposal.label, stream=context).line
        defines = tuple(proposal.defines) + tuple(proposal.numbers)
        uses = self.uses(line, defines)
        # Without new tensors the effects are known before the line runs (`del` must be ordered before it runs).
        trial = self.prepare(self.effects(proposal, context, {})) if not proposal.defines else None
        inputs_exact = all(self.is_exact(name) for name in proposal.reads if name in self.shadow)
        before = {name: self.shadow[name] for name in defines if name in self.shadow}
        try:
            exec(compile(line, "<fuzz>", "exec"), self.shadow)  # noqa: S102  generated code
        except Exception:  # noqa: BLE001  the CPU's verdict decides
            for name in defines:
                self.shadow.pop(name, None)
            self.shadow.update(before)
            if not keep_error:
                return False
            effects = [effect for effect in self.effects(proposal, context, {}) if effect[0] in ("read", "write")]
            self.prepare(effects)
            self.statements.append(Statement(proposal.code, proposal.label, (), uses, tuple(effects), context,
                                             sync=proposal.host_sync, expects_error=True))
            return True
        aliases = self.aliases(proposal)
        effects = self.effects(proposal, context, aliases)
        self.order = trial if trial is not None else self.prepare(effects)
        results = [self.shadow[name] for name in (*proposal.defines, *proposal.writes)]
        limits = [EXACT_LIMIT.get(tensor.dtype, 2**53) for tensor in results if isinstance(tensor, torch.Tensor)]
        bound_ok = proposal.bound is None or not limits or proposal.bound(self.shadow) <= min(limits)
        functional = proposal.functional and context is None and all(
            self.devices.get(name, 0) == 0 for name in proposal.reads) and all(
            device == 0 for device in proposal.defines.values())
        sync = proposal.host_sync or any(effect[0].startswith("host_sync") for effect in effects)
        self.statements.append(Statement(proposal.code, proposal.label, defines, uses, tuple(effects), context,
                                         sync=sync, functional=functional))
        self.devices.update(proposal.defines)
        exact_op = proposal.exact and inputs_exact and bound_ok
        for name in proposal.defines:
            if name in aliases:
                if proposal.reinterprets or aliases[name] in self.reinterpreted:
                    self.reinterpreted.add(name)
                continue
            self.exact_storage[self.order.storage_of[name]] = exact_op and exact_values(self.shadow[name])
        for name in proposal.writes:
            storage = self.order.storage_of[name]
            self.exact_storage[storage] = self.exact_storage.get(storage, False) and exact_op and exact_values(
                self.shadow[name])
        return True

    def aliases(self, proposal: Proposal) -> dict[str, str]:
        """Defined names that share memory with a live tensor (views, no-op conversions)."""
        by_storage = {}
        for name in self.devices:
            tensor = self.shadow.get(name)
            if isinstance(tensor, torch.Tensor) and name not in proposal.defines \
                    and tensor.untyped_storage().nbytes() > 0:
                by_storage.setdefault(tensor.untyped_storage().data_ptr(), name)
        found = {}
        for name in proposal.defines:
            tensor = self.shadow[name]
            if tensor.untyped_storage().nbytes() > 0:
                of = by_storage.get(tensor.untyped_storage().data_ptr())
                if of is not None and of in self.order.storage_of:
                    found[name] = of
            by_storage.setdefault(tensor.untyped_storage().data_ptr(), name)
        return found

    def effects(self, proposal: Proposal, context: str | None, aliases: dict[str, str]) -> list[tuple]:
        def current(device):
            if device is None:
                return HOST
            if context is not None and self.stream_devices[context] == device:
                return context
            return default_stream(device)

        if proposal.custom_effects is not None:
            return proposal.custom_effects(current)
        effects = [("read", name, current(self.devices[name])) for name in proposal.reads]
        effects += [("write", name, current(self.devices[name])) for name in proposal.writes]
        if proposal.host_sync:
            devices = {self.devices[name] for name in proposal.reads} - {None}
            effects += [("host_sync", current(device)) for device in sorted(devices)]
        for name, device in proposal.defines.items():
            effects.append(("alias", name, aliases[name]) if name in aliases else ("new", name, current(device)))
        return effects

    # -- the program -------------------------------------------------------------------------

    def generate(self, error_rate: float) -> Program:
        for _ in range(self.rng.randint(1, 3)):
            device = self.random_device()
            self.create(self.random_shape(), self.random_dtype(), device, normal=self.rng.random() < 0.3)
        attempts = 0
        while len(self.statements) < self.length and attempts < self.length * 12:
            attempts += 1
            builder = ops.choose(self.rng)
            proposal = builder(self)
            if proposal is not None:
                self.attempt(proposal)
        if self.rng.random() < error_rate:
            for _ in range(30):
                builder = ops.choose_error(self.rng)
                proposal = builder(self)
                if proposal is not None and self.attempt(proposal, keep_error=True) \
                        and self.statements[-1].expects_error:
                    break
        self.shadow.clear()
        return Program(self.seed, self.statements, self.devices)


def generate(seed: int, length: int | None = None, error_rate: float = 0.35) -> Program:
    """The program for `seed` (the same program on every machine and every run)."""
    length = length if length is not None else random.Random(seed ^ 0x5EED).randint(12, 48)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ProgramGenerator(seed, length).generate(error_rate)
