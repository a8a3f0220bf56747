"""nn.LSTM as oneDNN's LSTM layers, as on the CPU (csrc/ops/recurrent_layers.cpp).

Each case runs one module on the CPU and on axon and compares outputs, final states and every gradient (bit for
bit where axon runs oneDNN's layers, as the CPU does). It also checks from the autograd graph which route axon
took (oneDNN's layer has its own backward node), so a case the route would get wrong cannot pass by having taken
the composite instead.
"""

import copy

import pytest
import torch
from conftest import assert_same_bits
from torch import nn


def autograd_nodes(tensor):
    """The names of every node of `tensor`'s autograd graph."""
    names, pending, seen = set(), [tensor.grad_fn], set()
    while pending:
        node = pending.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        names.add(node.name())
        pending.extend(next_node for next_node, _ in node.next_functions)
    return names


def run(module, x, device, state=None):
    """Outputs, final states, the input's gradient and the parameters' gradients of one forward and backward."""
    module = copy.deepcopy(module).to(device)
    x = x.to(device, copy=True).requires_grad_()
    state = None if state is None else tuple(s.to(device, copy=True).requires_grad_() for s in state)
    out, (h, c) = module(x, state)
    (out.sum() + 2 * h.sum() + 3 * c.sum()).backward()
    grads = [x.grad] + ([] if state is None else [s.grad for s in state]) + [p.grad for p in module.parameters()]
    return [out, h, c] + grads, autograd_nodes(out)


def compare(module, x, state=None, *, onednn):
    expected, _ = run(module, x, "cpu", state)
    got, nodes = run(module, x, "axon", state)
    assert ("MkldnnRnnLayerBackward0" in nodes) == onednn, nodes
    if onednn:
        assert_same_bits(expected, got)
    else:  # the composite composes each step from axon's fused cells, the CPU's from separate operators
        for e, g in zip(expected, got):
            torch.testing.assert_close(g.cpu(), e)


@pytest.mark.parametrize("options", [
    dict(num_layers=1),
    dict(num_layers=2, batch_first=True),
    dict(num_layers=2, bidirectional=True),
    dict(num_layers=3, bidirectional=True, batch_first=True),
    dict(num_layers=2, bias=False),
])
def test_lstm_runs_onednn_layers_with_the_cpus_bits(options):
    torch.manual_seed(0)
    module = nn.LSTM(12, 20, **options)
    x = torch.randn(4, 6, 12)
    compare(module, x, onednn=True)


def test_bfloat16_lstm_runs_onednn_layers_where_the_cpu_does():
    # The CPU runs bfloat16 LSTMs as oneDNN layers where its oneDNN takes bfloat16; unrolled, a 64-step LSTM's
    # forward and backward took 7.7 times the CPU's time on axon.
    if not torch.ops.mkldnn._is_mkldnn_bf16_supported():
        pytest.skip("the CPU's oneDNN does not take bfloat16 on this host")
    torch.manual_seed(10)
    module = nn.LSTM(12, 20, num_layers=2, bidirectional=True, batch_first=True).to(torch.bfloat16)
    compare(module, torch.randn(4, 6, 12, dtype=torch.bfloat16), onednn=True)


def test_lstm_with_initial_states():
    torch.manual_seed(1)
    module = nn.LSTM(8, 16, num_layers=2, bidirectional=True)
    state = (torch.randn(4, 3, 16), torch.randn(4, 3, 16))
    compare(module, torch.randn(5, 3, 8), state, onednn=True)


@pytest.mark.parametrize("name,module,dtype", [
    ("projections", nn.LSTM(8, 16, num_layers=2, proj_size=6), torch.float32),
    ("double", nn.LSTM(8, 16, num_layers=2), torch.float64),
])
def test_other_lstms_take_the_composite(name, module, dtype):
    torch.manual_seed(2)
    compare(module.to(dtype), torch.randn(5, 3, 8, dtype=dtype), onednn=False)


def test_onednn_disabled_takes_the_composite():
    torch.manual_seed(3)
    with torch.backends.mkldnn.flags(enabled=False):
        compare(nn.LSTM(8, 16), torch.randn(5, 3, 8), onednn=False)


def test_lstm_without_gradients_and_in_inference_mode():
    torch.manual_seed(4)
    module = nn.LSTM(8, 16, num_layers=2, batch_first=True)
    x = torch.randn(3, 5, 8)
    expected = module(x)[0].detach()
    on_axon = copy.deepcopy(module).to("axon")
    with torch.no_grad():
        assert_same_bits([expected], [on_axon(x.to("axon"))[0]])
    with torch.inference_mode():
        assert_same_bits([expected], [on_axon(x.to("axon"))[0]])


@pytest.mark.parametrize("kind", [nn.LSTM, nn.GRU])
def test_dropout_between_layers_in_training(kind):
    torch.manual_seed(5)
    module = kind(8, 16, num_layers=3, dropout=0.5).to("axon").train()
    x = torch.randn(5, 3, 8, device="axon")
    torch.manual_seed(6)
    first = module(x)[0]
    torch.manual_seed(6)
    again = module(x)[0]
    assert_same_bits([first.cpu()], [again])  # the same seed draws the same masks
    assert not torch.equal(first.cpu(), module.eval()(x)[0].cpu())  # and dropout did drop


def test_wrong_input_size_raises_the_cpus_error():
    module = nn.LSTM(8, 16)
    with pytest.raises(RuntimeError) as cpu_error:
        module(torch.randn(5, 3, 9))
    with pytest.raises(RuntimeError) as axon_error:
        copy.deepcopy(module).to("axon")(torch.randn(5, 3, 9, device="axon"))
    assert str(axon_error.value) == str(cpu_error.value)


@pytest.mark.parametrize("backend", ["axon", "inductor"])
def test_compiled_lstm_matches_eager(backend):
    torch.manual_seed(7)
    module = nn.LSTM(8, 16, num_layers=2, batch_first=True).to("axon")
    x = torch.randn(3, 5, 8, device="axon")
    eager = module(x)[0]
    torch._dynamo.reset()
    compiled = torch.compile(module, backend=backend)(x)[0]
    torch.testing.assert_close(compiled.cpu(), eager.cpu())


@pytest.mark.parametrize("name,call", [
    ("hidden batch smaller", lambda m, x: torch._VF.lstm(x, [torch.zeros(1, 2, 6, device="axon")] * 2,
                                                         m._flat_weights, True, 1, 0.0, True, False, False)),
    ("hidden batch larger", lambda m, x: torch._VF.lstm(x, [torch.zeros(1, 4, 6, device="axon")] * 2,
                                                        m._flat_weights, True, 1, 0.0, True, False, False)),
    ("input features", lambda m, x: torch._VF.lstm(torch.randn(5, 3, 5, device="axon"),
                                                   [torch.zeros(1, 3, 6, device="axon")] * 2, m._flat_weights,
                                                   True, 1, 0.0, True, False, False)),
])
def test_sizes_that_do_not_fit_raise_instead_of_writing_out_of_bounds(name, call):
    # The CPU's oneDNN route does not check these and writes out of bounds; axon leaves them to the composite.
    module = nn.LSTM(4, 6).to("axon")
    with pytest.raises(RuntimeError):
        call(module, torch.randn(5, 3, 4, device="axon"))
        torch.axon.synchronize()


def test_autocast_gives_the_lstm_its_dtype_as_on_the_cpu():
    torch.manual_seed(8)
    module, x = nn.LSTM(4, 6, 2), torch.randn(5, 3, 4)
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            expected = module(x)[0].dtype
    except RuntimeError as error:
        # oneDNN builds no bfloat16 LSTM on hosts without bfloat16 instructions (seen on an AVX2-only AMD EPYC);
        # the CPU's autocast still gives the LSTM bfloat16 (it is on its lower-precision list).
        if "primitive descriptor" not in str(error):
            raise
        expected = torch.bfloat16
    module = module.to("axon")
    with torch.autocast("axon", dtype=torch.bfloat16):
        got = module(x.to("axon"))[0]
    assert got.dtype == expected == torch.bfloat16


@pytest.mark.parametrize("kind", [nn.LSTM, nn.GRU])
@pytest.mark.parametrize("backend", ["axon", "inductor"])
def test_compiled_lstm_traced_whole_matches_eager(backend, kind):
    # With allow_rnn Dynamo traces into the LSTM or GRU: its fake tensors take the composite.
    torch.manual_seed(9)
    module = kind(4, 6, 2, bidirectional=True).to("axon")
    x = torch.randn(5, 3, 4, device="axon")
    eager = module(x)[0]
    torch._dynamo.reset()
    with torch._dynamo.config.patch(allow_rnn=True):
        compiled = torch.compile(module, backend=backend)(x)[0]
        compiled.sum().backward()
    torch.testing.assert_close(compiled.cpu(), eager.cpu())


# ---- nn.GRU and nn.RNN: the CPU's route (csrc/ops/single_state_recurrent_layers.cpp) ----


def run_single_state(module, x, device, state=None):
    """Outputs, final state and every gradient of one forward and backward, and the autograd graph's node names."""
    module = copy.deepcopy(module).to(device)
    x = x.to(device, copy=True).requires_grad_()
    state = None if state is None else state.to(device, copy=True).requires_grad_()
    out, h = module(x, state)
    (out.sum() + 2 * h.sum()).backward()
    grads = [x.grad] + ([] if state is None else [state.grad]) + [p.grad for p in module.parameters()]
    return [out, h] + grads, autograd_nodes(out)


@pytest.mark.parametrize("factory", [
    lambda: nn.GRU(12, 20),
    lambda: nn.GRU(12, 20, num_layers=2, bidirectional=True, batch_first=True),
    lambda: nn.GRU(12, 20, num_layers=3, bias=False),
    lambda: nn.RNN(12, 20, num_layers=2, batch_first=True),
    lambda: nn.RNN(12, 20, nonlinearity="relu", bidirectional=True),
], ids=["gru", "gru-bidirectional-batch-first", "gru-no-bias", "rnn-tanh", "rnn-relu-bidirectional"])
def test_gru_and_rnn_project_each_layers_inputs_in_one_product_as_the_cpu_does(factory):
    # On other devices than the CPU, ATen's composite makes one input product per time step and, for a GRU, calls
    # the fused cell (its own backward node); the CPU projects the whole sequence once per layer and direction
    # (one AddmmBackward0 or MmBackward0 per layer input instead of one per step) and composes the cell.
    torch.manual_seed(0)
    module, x = factory(), torch.randn(5, 3, 12)
    state = torch.randn(module.num_layers * (2 if module.bidirectional else 1), 5 if module.batch_first else 3, 20)
    for initial in (None, state):
        expected, cpu_nodes = run_single_state(module, x, "cpu", initial)
        got, axon_nodes = run_single_state(module, x, "axon", initial)
        assert "ThnnFusedGruCellBackward0" not in axon_nodes
        assert axon_nodes == cpu_nodes
        for e, g in zip(expected, got):
            torch.testing.assert_close(g.cpu(), e)


@pytest.mark.parametrize("kind", [nn.GRU, nn.RNN])
def test_products_per_layer_and_step_are_the_cpus(kind):
    # A 2-layer network over 6 steps makes 2 input products and 12 hidden ones, as on the CPU (the composite on
    # other devices: 12 of each).
    module = kind(8, 16, num_layers=2).to("axon")
    x = torch.randn(6, 3, 8, device="axon")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        module(x)
    products = sum(event.count for event in profile.key_averages() if event.key in ("aten::addmm", "aten::mm"))
    assert products == 2 + 2 * 6


@pytest.mark.parametrize("name,call", [
    ("empty sequence", lambda m: m(torch.randn(0, 3, 8, device="axon"))),
    ("wrong input size", lambda m: m(torch.randn(5, 3, 9, device="axon"))),
    ("state on the CPU", lambda m: m(torch.randn(5, 3, 8, device="axon"), torch.zeros(1, 3, 16))),
])
def test_gru_errors_are_the_cpus(name, call):
    cpu_module = nn.GRU(8, 16)
    cpu_call = {"empty sequence": lambda m: m(torch.randn(0, 3, 8)),
                "wrong input size": lambda m: m(torch.randn(5, 3, 9)),
                "state on the CPU": None}[name]
    with pytest.raises(RuntimeError) as axon_error:
        call(copy.deepcopy(cpu_module).to("axon"))
        torch.axon.synchronize()
    if cpu_call is not None:
        with pytest.raises(RuntimeError) as cpu_error:
            cpu_call(cpu_module)
        assert str(axon_error.value) == str(cpu_error.value)
