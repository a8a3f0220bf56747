"""torch.compile(backend="axon") gives eager's answers where data decides them: out-of-range indices raise
eager's exception (StableHLO would clamp or drop them), negative indices wrap exactly where eager wraps them,
and ties in topk / sort / arg-reductions are broken as the CPU kernels break them."""

from __future__ import annotations

import threading

import pytest
import torch
import torch.nn.functional as F
from conftest import closed_gate, requires_not_blocking, run_python

import torch_axon.compile as axon_compile

pytestmark = pytest.mark.usefixtures("fresh_compile_state")


def _compile(function):
    # strict: every op must lower, so these tests exercise the lowerings, never an eager fallback.
    return torch.compile(function, backend="axon", options={"strict": True})


def _outcome(function, *args):
    """("ok", flat results on the CPU) or ("error", exception type), errors surfacing by a synchronize."""
    try:
        result = function(*args)
        torch.axon.synchronize()
    except (IndexError, RuntimeError) as error:
        torch.axon.synchronize()
        return "error", type(error)
    leaves = torch.utils._pytree.tree_leaves(result)
    return "ok", [leaf.cpu() for leaf in leaves]


def _assert_same_outcome(compiled, eager, *args):
    expected, got = _outcome(eager, *args), _outcome(compiled, *args)
    assert got[0] == expected[0], f"eager: {expected}, compiled: {got}"
    if expected[0] == "error":
        assert got[1] is expected[1], f"eager raised {expected[1].__name__}, compiled raised {got[1].__name__}"
    else:
        for want, have in zip(expected[1], got[1]):
            # Indices (integers) must be identical; computed floats may differ by rounding.
            exact = {} if want.is_floating_point() else {"rtol": 0, "atol": 0}
            torch.testing.assert_close(have, want, equal_nan=True, **exact)
    return expected[0]


def _axon(values, dtype=torch.int64):
    return torch.tensor(values, dtype=dtype, device="axon")


def _x():
    return torch.arange(20.0, device="axon").reshape(4, 5)


# ---- index bounds ------------------------------------------------------------------------------
def _setitem(x, i):
    x[i] = -1.0
    return x


# (name, function of (x [4, 5], i), index from a list of 2 values, size of the indexed dimension,
#  whether eager counts negative indices from the end)
_INDEX_OPS = [
    ("getitem", lambda x, i: x[i], lambda v: _axon(v), 4, True),
    ("getitem_dim1", lambda x, i: x[:, i], lambda v: _axon(v), 5, True),
    ("getitem_two", lambda x, i: x[i, i.clamp(0, 4)], lambda v: _axon(v), 4, True),
    ("take", lambda x, i: torch.take(x, i), lambda v: _axon([n * 5 for n in v]), 20, True),
    ("gather", lambda x, i: torch.gather(x, 0, i), lambda v: _axon([v + [0, 0, 0]]), 4, False),
    ("gather_dim1", lambda x, i: torch.gather(x, 1, i), lambda v: _axon([[v[0]], [v[1]], [0], [0]]), 5, False),
    ("embedding", lambda x, i: F.embedding(i, x), lambda v: _axon([v]), 4, False),
    ("embedding_int32", lambda x, i: F.embedding(i, x), lambda v: _axon(v, torch.int32), 4, False),
    ("index_select", lambda x, i: torch.index_select(x, 0, i), lambda v: _axon(v), 4, False),
    ("index_select_dim1", lambda x, i: torch.index_select(x, 1, i), lambda v: _axon(v), 5, False),
    ("index_put", lambda x, i: x.index_put((i,), torch.tensor(-1.0, device="axon")), lambda v: _axon(v), 4, True),
    ("index_put_accumulate", lambda x, i: x.index_put((i,), torch.ones(2, 5, device="axon"), accumulate=True),
     lambda v: _axon(v), 4, True),
    ("setitem", lambda x, i: _setitem(x.clone(), i), lambda v: _axon(v), 4, True),
    ("index_add", lambda x, i: x.index_add(0, i, torch.ones(2, 5, device="axon")), lambda v: _axon(v), 4, False),
    ("index_copy", lambda x, i: x.index_copy(0, i, torch.ones(2, 5, device="axon")), lambda v: _axon(v), 4,
     False),
    ("index_fill", lambda x, i: x.index_fill(0, i, -1.0), lambda v: _axon(v), 4, True),
    ("index_reduce", lambda x, i: x.index_reduce(0, i, torch.full((2, 5), 2.0, device="axon"), "prod"),
     lambda v: _axon(v), 4, False),
    ("scatter_value", lambda x, i: x.scatter(0, i, -1.0), lambda v: _axon([v + [0, 0, 0]]), 4, False),
    ("scatter_src", lambda x, i: x.scatter(0, i, -x), lambda v: _axon([v + [0, 0, 0]]), 4, False),
    ("scatter_add", lambda x, i: x.scatter_add(0, i, x), lambda v: _axon([v + [0, 0, 0]]), 4, False),
    ("scatter_reduce", lambda x, i: x.scatter_reduce(0, i, x, "amax"), lambda v: _axon([v + [0, 0, 0]]), 4,
     False),
    ("scatter_reduce_mean", lambda x, i: x.scatter_reduce(0, i, x, "mean", include_self=False),
     lambda v: _axon([v + [0, 0, 0]]), 4, False),
    ("cross_entropy", lambda x, i: F.cross_entropy(x[:2], i), lambda v: _axon(v), 5, False),
    ("nll_loss_none", lambda x, i: F.nll_loss(x[:2], i, reduction="none"), lambda v: _axon(v), 5, False),
    ("max_unpool2d", lambda x, i: F.max_unpool2d(x[:2, :2].reshape(1, 1, 2, 2), i, 2, output_size=[3, 5]),
     lambda v: _axon([[[[v[0], 1], [v[1], 3]]]]), 15, False),
    ("max_unpool1d", lambda x, i: F.max_unpool1d(x[:1, :2].reshape(1, 1, 2), i, 2, output_size=[5]),
     lambda v: _axon([[v]]), 5, False),
]


@pytest.mark.parametrize("name,function,make_index,size,wraps", _INDEX_OPS, ids=[c[0] for c in _INDEX_OPS])
def test_out_of_range_indices_raise_like_eager(name, function, make_index, size, wraps):
    compiled = _compile(function)
    x = _x()
    assert _assert_same_outcome(compiled, function, x, make_index([1, 2])) == "ok"
    lowest = -size if wraps else 0
    for bad in (size, size + 5, lowest - 1, lowest - 7):
        assert _assert_same_outcome(compiled, function, x, make_index([1, bad])) == "error", bad
    # In range, counted from the end where eager does so (else an error there too).
    for negative in (-1, -size):
        _assert_same_outcome(compiled, function, x, make_index([negative, 0]))


def _synchronized(function, *args):
    """Calls `function` and waits for the device: a graph that changes no input reports a failed check at the
    next synchronizing call, as an eager kernel does."""
    function(*args)
    torch.axon.synchronize()


def test_first_example_of_the_issue():
    compiled = _compile(lambda x, i: x[i])
    with pytest.raises(IndexError, match="index 9 is out of bounds for dimension 0 with size 4"):
        _synchronized(compiled, _x(), _axon([9, -7]))
    torch.testing.assert_close(compiled(_x(), _axon([-1, -4])), _x()[[3, 0]])


def test_messages_name_op_size_and_value():
    x = _x()
    with pytest.raises(RuntimeError, match=r"aten\.gather\.default .*index -1 is out of bounds for dimension 1 "
                                           r"with size 5"):
        _synchronized(_compile(lambda x, i: torch.gather(x, 1, i)), x, _axon([[0], [0], [-1], [0]]))
    with pytest.raises(IndexError, match=r"aten\.embedding\.default .*index out of range in self"):
        _synchronized(_compile(lambda x, i: F.embedding(i, x)), x, _axon([4]))
    with pytest.raises(RuntimeError, match=r"aten\.index_add\.default \(lowered as aten\.index_put\.default\).*"
                                           r"index -1 is out of bounds for dimension 0 with size 4"):
        _synchronized(_compile(lambda x, i: x.index_add(0, i, torch.ones(1, 5, device="axon"))), x, _axon([-1]))
    with pytest.raises(IndexError, match="tried to access index 20 on a tensor of 20 elements"):
        _synchronized(_compile(lambda x, i: torch.take(x, i)), x, _axon([20]))
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        _synchronized(_compile(lambda x, t: F.cross_entropy(x, t)), x, _axon([0, 1, 7, 2]))


def test_scatter_with_bad_index_raises_instead_of_dropping_updates():
    x = torch.zeros(4, device="axon")
    add = _compile(lambda x, i, v: x.index_put((i,), v, accumulate=True))
    with pytest.raises(IndexError):
        _synchronized(add, x, _axon([0, 6]), torch.ones(2, device="axon"))
    scatter = _compile(lambda x, i, v: x.scatter_add(0, i, v))
    with pytest.raises(RuntimeError, match="index 4 is out of bounds"):
        _synchronized(scatter, x, _axon([4, 0]), torch.ones(2, device="axon"))


@requires_not_blocking
def test_a_graph_that_changes_no_input_reports_a_failed_check_without_making_the_call_wait():
    # Reading the check table at the call made the host wait for the device after every checked partition
    # (embedding and loss in a language model's forward); the report now runs behind it on the stream.
    embed = _compile(lambda w, i: F.embedding(i, w) * 2)
    w, good, bad = torch.randn(4, 5, device="axon"), _axon([1, 3]), _axon([1, 9])
    torch.testing.assert_close(embed(w, good), F.embedding(good, w) * 2)
    returned = threading.Event()
    with closed_gate():
        caller = threading.Thread(target=lambda: (embed(w, bad), returned.set()))
        caller.start()
        # The call cannot finish on the device while the gate is closed: it returns only if it does not wait.
        assert returned.wait(timeout=60), "the compiled call waited for the device"
    caller.join()
    with pytest.raises(IndexError, match=r"aten\.embedding\.default .*index out of range in self\n"
                                         r"\[axon\] raised by that kernel while it ran asynchronously"):
        torch.axon.synchronize()
    torch.axon.synchronize()  # reported once
    torch.testing.assert_close(embed(w, good), F.embedding(good, w) * 2)


def test_under_launch_blocking_a_failed_check_raises_at_the_call():
    code = """
import torch, torch.nn.functional as F
embed = torch.compile(lambda w, i: F.embedding(i, w), backend="axon")
w = torch.randn(4, 5, device="axon")
embed(w, torch.tensor([1], device="axon"))
try:
    embed(w, torch.tensor([9], device="axon"))
except IndexError as error:
    print("raised at the call:", "index out of range in self" in str(error))
"""
    result = run_python(code, env={"AXON_LAUNCH_BLOCKING": "1"})
    assert "raised at the call: True" in result.stdout, result.stdout + result.stderr


def test_in_place_index_update_of_an_input_raises_and_leaves_it_unchanged():
    def update(x, i):
        x[i] += 1

    x = torch.zeros(4, device="axon")
    compiled = _compile(update)
    compiled(x, _axon([1, -1]))
    assert x.cpu().tolist() == [0, 1, 0, 1]
    with pytest.raises(IndexError):
        compiled(x, _axon([1, 4]))
    assert x.cpu().tolist() == [0, 1, 0, 1]


def test_masked_scatter_with_too_short_source_raises():
    function = _compile(lambda x, m, s: x.masked_scatter(m, s))
    x, source = torch.zeros(5, device="axon"), torch.arange(1.0, 4.0, device="axon")
    ok = _axon([1, 0, 1, 0, 1], torch.bool)
    torch.testing.assert_close(function(x, ok, source), x.masked_scatter(ok, source))
    with pytest.raises(RuntimeError, match="Number of elements of source < number of ones in mask"):
        _synchronized(function, x, _axon([1, 1, 0, 1, 1], torch.bool), source)


def test_max_unpool_keeps_the_later_of_duplicate_indices():
    # Eager is no reference here: PyTorch documents max_unpool as nondeterministic with repeated indices
    # (the CPU kernel splits the plane across threads when called off the main thread, as axon's stream
    # worker does). Compiled code keeps the later element, as a sequential loop would, every time.
    function = _compile(lambda x, i: F.max_unpool1d(x, i, 2))
    x, indices = torch.arange(1.0, 5.0, device="axon").view(1, 1, 4), _axon([[[0, 1, 1, 0]]])
    for _ in range(20):
        torch.testing.assert_close(function(x, indices).cpu(), torch.tensor([[[4.0, 3.0, 0, 0, 0, 0, 0, 0]]]))


def test_checks_compile_into_the_executable_and_cost_no_reruns():
    function = _compile(lambda w, i, j: torch.gather(F.embedding(i, w), 1, j))
    w, i, j = torch.randn(10, 4, device="axon"), _axon([[1, 2], [3, 9]]), _axon([[[0], [1]], [[1], [1]]])
    torch.testing.assert_close(function(w, i, j), torch.gather(F.embedding(i, w), 1, j))
    graph = axon_compile.report().graphs[0]
    assert graph.runtime_checks == 2 and graph.eager_reruns == 0 and not graph.eager_ops


# ---- tie-breaking ------------------------------------------------------------------------------
def _patterns(length, dtype, seed=0):
    """Rows with many kinds of ties (and, for floats, NaNs, signed zeros and infinities)."""
    generator = torch.Generator().manual_seed(seed + length)

    def integers(high):
        return torch.randint(0, high, (length,), generator=generator).to(torch.float64)

    rows = {"all_equal": torch.zeros(length), "three_values": integers(3),
            "half_distinct": integers(max(2, length // 2)),
            "distinct": torch.randperm(length, generator=generator).to(torch.float64)}
    if dtype.is_floating_point:
        chosen = torch.rand(length, generator=generator)
        rows["nans"] = torch.where(chosen < 0.3, float("nan"), integers(3))
        rows["signed_zeros"] = torch.where(chosen < 0.5, -0.0, 0.0)
        rows["infinities"] = torch.where(chosen < 0.4, float("inf"), torch.where(chosen > 0.8, -float("inf"),
                                                                                 integers(2)))
    return {name: row.to(dtype).to("axon") for name, row in rows.items()}


_TIE_DTYPES = [torch.float32, torch.bfloat16, torch.int64]
_LENGTHS = [5, 16, 17, 40, 300]


def _check_against_eager(function, dtype, lengths=_LENGTHS, shapes=("row",)):
    for length in lengths:
        torch._dynamo.reset()
        compiled = _compile(function)
        for name, row in _patterns(length, dtype).items():
            for shape in shapes:
                x = row if shape == "row" else row.view(length, 1).expand(length, 3).contiguous()
                try:
                    _assert_same_outcome(compiled, function, x)
                except AssertionError as error:
                    raise AssertionError(f"{dtype}, length {length}, {name}, {shape}: {error}") from None


@pytest.mark.parametrize("dtype", _TIE_DTYPES, ids=str)
@pytest.mark.parametrize("largest", [True, False])
def test_topk_ties_match_eager(dtype, largest):
    def topk(x):
        length = x.shape[-1]
        return [torch.topk(x, k, largest=largest) for k in sorted({1, 2, length // 2, length})]

    _check_against_eager(topk, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64], ids=str)
def test_topk_unsorted_and_along_dim0_match_eager(dtype):
    _check_against_eager(lambda x: torch.topk(x, 2, sorted=False), dtype, lengths=[5, 300])
    _check_against_eager(lambda x: torch.topk(x, 1, dim=0, sorted=False), dtype, lengths=[17], shapes=("column",))
    _check_against_eager(lambda x: torch.topk(x, 3, dim=0), dtype, lengths=[17, 300], shapes=("column",))


@pytest.mark.parametrize("dtype", _TIE_DTYPES + [torch.bool], ids=str)
@pytest.mark.parametrize("stable", [False, True])
def test_sort_and_argsort_ties_match_eager(dtype, stable):
    def sort(x):
        return (torch.sort(x, stable=stable), torch.sort(x, descending=True, stable=stable),
                torch.argsort(x, stable=stable), torch.argsort(x, dim=0, descending=True, stable=stable))

    if dtype == torch.bool:
        _check_against_eager(lambda x: sort(x > 0), torch.float32, lengths=[5, 40])
    else:
        _check_against_eager(sort, dtype)


@pytest.mark.parametrize("dtype", _TIE_DTYPES + [torch.bool], ids=str)
def test_arg_reductions_match_eager(dtype):
    def reductions(x):
        return (torch.argmax(x), torch.argmin(x), torch.argmax(x, dim=0), torch.argmin(x, dim=0, keepdim=True),
                torch.max(x, dim=0), torch.min(x, dim=0))

    if dtype == torch.bool:  # argmax/argmin refuse bool
        _check_against_eager(lambda x: (torch.max(x > 0, dim=0), torch.min(x > 0, dim=0)), torch.float32,
                             lengths=[5, 300], shapes=("row", "column"))
    else:
        _check_against_eager(reductions, dtype, lengths=[5, 17, 300], shapes=("row", "column"))


def test_cumulative_extremes_and_unlowered_selections_match_eager():
    def selections(x):
        return (torch.cummax(x, 0), torch.cummin(x, 0), torch.kthvalue(x, 2), torch.median(x, dim=0),
                torch.mode(x))

    function = selections
    for length in (5, 40):
        torch._dynamo.reset()
        compiled = torch.compile(function, backend="axon")
        for row in _patterns(length, torch.float32).values():
            _assert_same_outcome(compiled, function, row)


def test_unsorted_topk_on_the_nth_element_path_runs_eagerly():
    function = lambda x: torch.topk(x, 3, sorted=False)  # noqa: E731  (k * 64 > n: nth_element's own order)
    x = torch.randperm(40, device="axon").float()
    compiled = torch.compile(function, backend="axon")
    values, indices = compiled(x)
    assert torch.equal(indices.cpu(), function(x).indices.cpu())
    assert axon_compile.report().eager_ops["aten.topk.default"] == 1


def test_unique_results_stay_compiled_and_ties_rerun_eagerly():
    function = _compile(lambda x: torch.topk(x, 4))
    distinct = torch.randperm(64, device="axon").float()
    torch.testing.assert_close(function(distinct), torch.topk(distinct, 4), rtol=0, atol=0)
    graph = axon_compile.report().graphs[0]
    assert graph.eager_reruns == 0
    tied = torch.zeros(64, device="axon")
    values, indices = function(tied)
    assert torch.equal(indices.cpu(), torch.topk(tied, 4).indices.cpu())
    assert graph.eager_reruns == 1


def test_moe_router_with_tied_scores_matches_eager():
    tokens, experts, hidden, k = 32, 8, 16, 2

    def route(x, gate, expert_weights):
        scores = (x @ gate).round()  # coarse scores: many ties between experts
        _, top_experts = torch.topk(scores, k, dim=-1)
        weights = torch.gather(scores, 1, top_experts).softmax(-1)
        chosen = F.embedding(top_experts, expert_weights)  # [tokens, k, hidden]
        mixed = (weights.unsqueeze(-1) * chosen).sum(1)
        load = torch.zeros(experts, device=x.device).index_add(0, top_experts.flatten(),
                                                                torch.ones(tokens * k, device=x.device))
        return mixed, top_experts, load

    generator = torch.Generator().manual_seed(0)
    x = torch.randn(tokens, hidden, generator=generator).to("axon")
    gate = (torch.randn(hidden, experts, generator=generator) * 0.1).to("axon")
    expert_weights = torch.randn(experts, hidden, generator=generator).to("axon")
    assert (route(x, gate, expert_weights)[0] == 0).sum() < tokens * hidden  # sanity
    compiled = _compile(route)
    for _ in range(2):
        got, want = compiled(x, gate, expert_weights), route(x, gate, expert_weights)
        torch.testing.assert_close(got[0], want[0])
        assert torch.equal(got[1].cpu(), want[1].cpu()) and torch.equal(got[2].cpu(), want[2].cpu())
    assert sum(graph.eager_reruns for graph in axon_compile.report().graphs) == 2  # the ties were there


# Found by the differential fuzzer (fuzz/known_issues.py kept them until fixed).
@pytest.mark.parametrize("function, make_input", [
    (torch.sign, lambda: torch.tensor([True, False])),
    (torch.sign, lambda: torch.tensor([0, 7, 200], dtype=torch.uint8)),
    (lambda x: torch.abs(x) * 2, lambda: torch.tensor([0, 7, 100], dtype=torch.uint8)),
    (lambda x: torch.argmax(x, 0), lambda: torch.tensor([3, 200, 7], dtype=torch.uint8)),
    (lambda x: torch.argmin(x), lambda: torch.tensor([3, 200, 0, 7], dtype=torch.uint8)),
    (lambda x: torch.sort(x), lambda: torch.tensor([3, 200, 0, 7], dtype=torch.uint8)),
    (lambda x: torch.cummax(x, 0), lambda: torch.zeros(0, 3)),
    (lambda x: torch.cummin(x, 1), lambda: torch.zeros(2, 0)),
    (lambda x: torch.cumsum(x, 1) + 1, lambda: torch.zeros(2, 0)),
    (lambda x: torch.logcumsumexp(x, 1) + 1, lambda: torch.zeros(2, 0)),
], ids=["sign-bool", "sign-uint8", "abs-uint8", "argmax-uint8", "argmin-uint8", "sort-uint8", "cummax-empty",
        "cummin-empty", "cumsum-empty", "logcumsumexp-empty"])
def test_unsigned_and_empty_inputs_lower_and_match_eager(function, make_input):
    # XLA rejected these modules: stablehlo.sign/abs on unsigned types, signed comparisons of unsigned values,
    # reduce_window with a window of 0.
    expected = function(make_input())
    got = _compile(function)(make_input().to("axon"))
    for g, e in zip(torch.utils._pytree.tree_leaves(got), torch.utils._pytree.tree_leaves(expected)):
        assert g.dtype == e.dtype and torch.equal(g.cpu(), e)


@pytest.mark.parametrize("function", [lambda x: torch.log_softmax(x, 0) * 2, lambda x: torch.softmax(x, 1) + 1],
                         ids=["log_softmax", "softmax"])
def test_complex_softmax_runs_eagerly_as_the_cpu_answers_it(function):
    # The module XLA got used stablehlo.is_finite on complex values, which it rejects: compiling failed (fuzz seed
    # 691856). The CPU has no complex softmax: an empty input gives an empty result, any other its error.
    compiled = torch.compile(function, backend="axon")
    empty = torch.zeros(0, 4, dtype=torch.complex64)
    assert torch.equal(compiled(empty.to("axon")).cpu(), function(empty))
    values = torch.randn(2, 4, dtype=torch.complex64)
    with pytest.raises(NotImplementedError) as on_cpu:
        function(values)
    with pytest.raises(NotImplementedError) as on_axon:
        compiled(values.to("axon"))
        torch.axon.synchronize()
    assert str(on_axon.value) == str(on_cpu.value)


@pytest.mark.parametrize("dtype", [torch.bool, torch.int64])
def test_softmax_of_integers_runs_eagerly_as_the_cpu_answers_it(dtype):
    # stablehlo.is_finite took a bool operand and XLA refused the module (fuzz seed 694980).
    function = torch.compile(lambda x: torch.softmax(x, -1), backend="axon")
    empty = torch.zeros(0, 1, dtype=dtype)
    got = function(empty.to("axon"))
    assert got.dtype == torch.softmax(empty, -1).dtype and got.shape == (0, 1)
    with pytest.raises(NotImplementedError):
        function(torch.ones(2, 3, dtype=dtype).to("axon"))
        torch.axon.synchronize()


@pytest.mark.parametrize("low, high", [(-2, None), (None, -3), (-200, -100)])
def test_negative_clamp_bounds_of_unsigned_tensors_wrap_as_in_eager(low, high):
    # Eager converts a negative bound to uint8 by wrapping: clamp(uint8, min=-2) clamps at 254. The literal -2
    # made XLA refuse the module (fuzz seed 695516).
    x = torch.tensor([0, 3, 100, 255], dtype=torch.uint8)
    function = _compile(lambda t: torch.clamp(t, min=low, max=high))
    assert torch.equal(function(x.to("axon")).cpu(), torch.clamp(x, min=low, max=high))


@pytest.mark.parametrize("function", [lambda a, b: a @ b, lambda a, b: torch.addmm(torch.ones_like(a @ b), a, b)],
                         ids=["mm", "addmm"])
def test_complex_products_with_infinities_give_eagers_nans(function):
    # The CPU's complex mm and addmm scale their sums by 1 + 0j (MKL's alpha), which turns an infinite part into
    # NaNs. XLA's product kept inf - infj (fuzz seed 693672). (Its batched complex products give NaNs where the
    # CPU's bmm, which does not scale, keeps infinities: not covered here.)
    inf = float("inf")
    a = torch.tensor([[complex(inf, 0), 1], [complex(1, inf), 2], [complex(0.5, -2), complex(3, 1)]],
                     dtype=torch.complex64)
    b = torch.tensor([[complex(4, -1), 1], [complex(2, 0), complex(0, 1)]], dtype=torch.complex64)
    expected = function(a, b)
    got = _compile(function)(a.to("axon"), b.to("axon")).cpu()
    assert torch.equal(got.isnan(), expected.isnan()) and torch.equal(got.isinf(), expected.isinf())
    finite = expected.isfinite()
    torch.testing.assert_close(got[finite], expected[finite])


def test_a_long_cummax_compiles_without_crashing_the_process():
    # XLA's CPU compiler crashed the process on cummax's two-operand reduce_window over 512 elements or more (fuzz
    # seed 671284); such scans run eagerly. In a fresh process: a crash must fail this test, not end the run.
    result = run_python("""
        import torch, torch_axon
        x = torch.randn(1000, dtype=torch.float64)
        function = torch.compile(lambda t: torch.cummax(t, 0), backend="axon")
        values, indices = function(x.to("axon"))
        expected = torch.cummax(x, 0)
        print(torch.equal(values.cpu(), expected[0]) and torch.equal(indices.cpu(), expected[1]))
    """, timeout=300)
    assert result.returncode == 0 and result.stdout.strip().endswith("True"), result.stderr[-2000:]


def test_an_op_that_is_the_identity_returns_a_new_tensor():
    # floor of an integer tensor lowers to its input; the result must not alias that input.
    def floor_then_bump(x):
        y = torch.floor(x)
        x.add_(1)
        return y

    x = torch.tensor([1, 2, 3], device="axon")
    assert _compile(floor_then_bump)(x).tolist() == [1, 2, 3]
    torch._dynamo.reset()
    x = torch.tensor([1, 2, 3], device="axon")
    y = _compile(torch.floor)(x)
    x.add_(10)
    assert y.tolist() == [1, 2, 3] and y.data_ptr() != x.data_ptr()


def test_out_into_a_tensor_the_graph_created_resizes_it():
    # The graph's torch.empty(0) is an adopted XLA output; out= must be able to resize it like any axon tensor.
    def mm_into_new(a, b):
        out = torch.empty(0, device=a.device)
        torch.mm(a, b, out=out)
        return out

    a, b = torch.randn(2, 3), torch.randn(3, 4)
    got = torch.compile(mm_into_new, backend="axon")(a.to("axon"), b.to("axon"))
    torch.testing.assert_close(got.cpu(), a @ b)


def test_compiled_adopted_outputs_resize_in_place():
    y = _compile(lambda x: x * 2)(torch.ones(4, device="axon"))
    y.resize_(16)
    assert y.shape == (16,) and y[:4].tolist() == [2.0] * 4


@pytest.mark.parametrize("dynamic", [False, True])
def test_returned_views_of_inputs_keep_their_offset(dynamic):
    # Found by the fuzzer: with dynamic=True, x.chunk(2, 0)[-1] gave the first chunk (AOTAutograd rebuilt the
    # output alias from the compiled copy's storage offset, 0). Such views now run as real axon views.
    x = torch.arange(18.0).reshape(6, 3)
    for function in (lambda t: t.chunk(2, 0)[-1], lambda t: t.split([2, 4])[1][1:], lambda t: (t[3:], t * 2)):
        torch._dynamo.reset()
        got = _compile_dynamic(function, dynamic)(x.to("axon"))
        expected = function(x)
        for g, e in zip(torch.utils._pytree.tree_leaves(got), torch.utils._pytree.tree_leaves(expected)):
            assert torch.equal(g.cpu(), e)
    y = x.to("axon")
    view = _compile_dynamic(lambda t: t.chunk(2, 0)[-1], dynamic)(y)
    y.add_(100)
    assert torch.equal(view.cpu(), x[3:] + 100)  # still a view of the input


def _compile_dynamic(function, dynamic):
    return torch.compile(function, backend="axon", dynamic=dynamic, options={"strict": True})


def test_a_returned_view_of_another_output_sees_later_writes_to_it():
    # Found by the fuzzer: `t5 = t2.view(1)` returned next to t2 was a separate compiled copy, so a later
    # `t2.fill_(True)` (after a graph break) left t5 unchanged.
    def function(t0):
        t2 = t0 ^ t0
        t5 = t2.view(1)
        torch._dynamo.graph_break()
        t2.fill_(True)
        return t2, t5

    for dynamic in (False, True):
        torch._dynamo.reset()
        t2, t5 = torch.compile(function, backend="axon", dynamic=dynamic)(torch.tensor(True, device="axon"))
        assert t2.item() is True and t5.tolist() == [True]


def test_false_times_a_non_finite_value_is_nan_as_in_eager():
    # Found by the fuzzer: XLA turns convert(bool) * y into select(bool, y, 0), so False * inf and False / 0 were 0.
    flags = torch.tensor([True, False, False, True])
    values = torch.tensor([float("inf"), float("-inf"), float("nan"), 2.0])
    for function, other in ((lambda a, b: a / b, torch.zeros(1)), (lambda a, b: a * b, values),
                            (lambda a, b: b * a, values), (lambda a, b: a / b, values)):
        torch._dynamo.reset()
        got = _compile(function)(flags.to("axon"), other.to("axon")).cpu()
        torch.testing.assert_close(got, function(flags, other), equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("bins, low, high", [(8, 0.0, 7.0), (1000, -1.0, 1e-3), (100, -4.0, 4.0)])
def test_histc_counts_every_element_in_the_cpu_kernels_bin(dtype, bins, low, high):
    # Values on and next to bin edges, outside the range, NaN and infinities. XLA rewrites a division by a
    # constant as a product with its reciprocal; that put 1 in 100,000 float32 elements one bin off.
    generator = torch.Generator().manual_seed(0)
    x = torch.cat([torch.randn(100_000, generator=generator, dtype=dtype) * 3, torch.linspace(-4, 4, 8001, dtype=dtype),
                   torch.tensor([float("nan"), float("inf"), -float("inf"), low, high], dtype=dtype)])
    compiled = _compile(lambda t: torch.histc(t, bins, low, high))
    assert torch.equal(compiled(x.to("axon")).cpu(), torch.histc(x, bins, low, high))


def test_histc_ranges_the_lowering_leaves_to_eager_match_eager():
    # A range from the data (min == max) is a host decision; an invalid range raises eager's error at the call.
    x = torch.tensor([0.5, 2.0, 2.0, 7.0])
    from_data = torch.compile(lambda t: torch.histc(t, 4), backend="axon")
    assert torch.equal(from_data(x.to("axon")).cpu(), torch.histc(x, 4))
    inverted = torch.compile(lambda t: torch.histc(t, 4, 3.0, 1.0), backend="axon")
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        inverted(x.to("axon"))


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("dtype", [torch.float64, torch.complex64])
def test_triangular_solves_broadcast_batches_like_eager(upper, left, dtype):
    generator = torch.Generator().manual_seed(0)
    a = torch.randn(3, 1, 5, 5, generator=generator).to(dtype) + 4 * torch.eye(5, dtype=dtype)
    b = torch.randn(4, 5, 2, generator=generator).to(dtype)
    b = b if left else b.mT
    compiled = _compile(lambda p, q: torch.linalg.solve_triangular(p, q, upper=upper, left=left))
    got = compiled(a.to("axon"), b.to("axon")).cpu()
    torch.testing.assert_close(got, torch.linalg.solve_triangular(a, b, upper=upper, left=left))
    if left:  # the older spelling solves from the left only; transpose=True is a plain transpose
        torch._dynamo.reset()
        solution, coefficient = _compile(lambda q, p: torch.triangular_solve(q, p, upper, transpose=True))(
            b.to("axon"), a.to("axon"))
        expected = torch.triangular_solve(b, a, upper, transpose=True)
        torch.testing.assert_close(solution.cpu(), expected.solution)
        assert torch.equal(coefficient.cpu(), expected.cloned_coefficient)


@pytest.mark.parametrize("rounding_mode", [None, "trunc", "floor"])
def test_division_by_a_number_is_an_ieee_division_as_in_eager(rounding_mode):
    # XLA rewrote x / 1.7 as x * (1 / 1.7): a third of the float32 quotients were one ulp off, and 408 of these
    # 200,000 truncated quotients one integer off.
    x = torch.arange(-100_000, 100_000, dtype=torch.float32) * 0.37
    for divisor in (1.7, 7.0, 0.1, 25.0):
        torch._dynamo.reset()
        function = lambda t: torch.div(t, divisor, rounding_mode=rounding_mode)  # noqa: E731, B023
        assert torch.equal(_compile(function)(x.to("axon")).cpu(), function(x))
    torch._dynamo.reset()
    assert torch.equal(_compile(lambda t: t // 1.7)(x.to("axon")).cpu(), x // 1.7)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("case", ["plain", "causal", "bool_mask", "float_mask", "grouped_heads", "fully_masked_row",
                                  "longer_keys"])
def test_attention_training_gradients_match_eager(case, dtype, monkeypatch):
    monkeypatch.setenv("AXON_COMPILE_EXTERN", "convolution")  # attention compiled (decomposed), not extern
    # PyTorch's decomposition of the CPU attention forward returns the attention weights where the kernel returns
    # its logsumexp; a compiled training step handed those to the backward, and every gradient came out wrong.
    torch.manual_seed(0)
    batch, heads, length, keys, size = 2, 4, 8, 12 if case == "longer_keys" else 8, 16
    kv_heads = 2 if case == "grouped_heads" else heads
    # laid out as projections make it: (B, L, H, E) transposed
    query = torch.randn(batch, length, heads, size, device="axon", dtype=dtype).transpose(1, 2)
    key = torch.randn(batch, kv_heads, keys, size, device="axon", dtype=dtype)
    value = torch.randn(batch, kv_heads, keys, size, device="axon", dtype=dtype)
    mask = None
    if case in ("bool_mask", "fully_masked_row"):
        mask = torch.rand(length, keys, device="axon") > 0.3
        if case == "fully_masked_row":
            mask[2] = False
    elif case == "float_mask":
        mask = torch.randn(batch, 1, length, keys, device="axon", dtype=dtype)
    weight = torch.randn(batch, heads, length, size, device="axon", dtype=dtype)

    def attention(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=case in ("causal", "longer_keys"),
                                              enable_gqa=kv_heads != heads)

    def step(function):
        leaves = [t.detach().clone().requires_grad_() for t in (query, key, value)]
        output = function(*leaves)
        (output * weight).sum().backward()
        return output.detach(), [leaf.grad for leaf in leaves]

    expected, expected_grads = step(attention)
    # Not strict: before the fix the backward ran eagerly, with the wrong logsumexp, and no error said so.
    actual, actual_grads = step(torch.compile(attention, backend="axon"))
    tolerance = {"atol": 1e-5, "rtol": 1e-5} if dtype == torch.float32 else {"atol": 3e-2, "rtol": 3e-2}
    torch.testing.assert_close(actual.cpu(), expected.cpu(), **tolerance)
    assert actual.stride() == expected.stride()
    for name, got, want in zip("qkv", actual_grads, expected_grads):
        torch.testing.assert_close(got.cpu(), want.cpu(), **tolerance, msg=lambda m, name=name: f"grad {name}: {m}")
        assert got.stride() == want.stride(), name


def test_attention_backward_compiles_whole(monkeypatch):
    monkeypatch.setenv("AXON_COMPILE_EXTERN", "convolution")  # attention compiled (decomposed), not extern
    query, key, value = (torch.randn(2, 4, 8, 16, device="axon", requires_grad=True) for _ in range(3))
    output = _compile(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True))(query, key, value)
    output.sum().backward()  # strict: raises if the forward or the backward left an op to eager
    assert query.grad is not None and key.grad is not None and value.grad is not None


@pytest.mark.parametrize("case", ["maximum", "minimum", "clamp_tensor_bounds", "amax", "amin", "max", "min",
                                  "inf_norm", "softmax"])
def test_nan_propagates_through_max_and_min_as_in_eager(case):
    # XLA:CPU's max/min return the other operand when one is NaN; a NaN in a loss vanished from the compiled one.
    nan = float("nan")
    a = torch.tensor([[nan, 1.0, nan, -2.0, 3.0], [0.5, 2.0, 1.0, -1.0, 4.0]], device="axon")
    b = torch.tensor([[1.0, nan, nan, -1.0, 2.0], [1.0, 1.0, 1.0, 1.0, 1.0]], device="axon")
    function = {
        "maximum": lambda a, b: torch.maximum(a, b),
        "minimum": lambda a, b: torch.minimum(b, a),
        "clamp_tensor_bounds": lambda a, b: b.clamp(min=a - 1, max=a),
        "amax": lambda a, b: a.amax(1),
        "amin": lambda a, b: torch.stack([a, b]).amin(0),
        "max": lambda a, b: a.max() + b.max(),
        "min": lambda a, b: a[1].min() + a.min(),
        "inf_norm": lambda a, b: torch.linalg.vector_norm(a, float("inf"), dim=1),
        "softmax": lambda a, b: torch.softmax(a, 1),
    }[case]
    expected = function(a, b).cpu()
    actual = _compile(function)(a, b).cpu()
    torch.testing.assert_close(actual, expected, equal_nan=True)


def test_bernoulli_with_a_tensor_of_probabilities_draws_what_eager_draws():
    probabilities = torch.rand(4096, device="axon")
    torch.manual_seed(7)
    expected = torch.bernoulli(probabilities).cpu()
    torch.manual_seed(7)
    actual = torch.compile(torch.bernoulli, backend="axon")(probabilities).cpu()
    assert torch.equal(actual, expected)
