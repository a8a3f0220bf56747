"""Nested tensors on axon: the strided layout (NestedTensorImpl over an axon
buffer) for every operator the CPU has, and the jagged layout eagerly and
under torch.compile."""

import io

import pytest
import torch
from conftest import run_python


@pytest.fixture(autouse=True)
def no_fallback():
    torch.axon.reset_fallback_ops()
    yield
    torch.axon.synchronize()
    assert torch.axon.fallback_ops() == {}


def components(*shapes, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(*shape, generator=generator) for shape in shapes]


def nested(device, *shapes, seed=0, requires_grad=False):
    shapes = shapes or ((2, 4), (3, 4))
    return torch.nested.nested_tensor(components(*shapes, seed=seed), device=device, requires_grad=requires_grad)


def assert_same(actual, expected):
    if isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same(a, e)
        return
    assert actual.device.type == "axon", actual.device
    assert actual.is_nested == expected.is_nested and actual.dtype == expected.dtype
    if expected.is_nested:
        assert_same(list(actual.unbind()), list(expected.unbind()))
        return
    torch.testing.assert_close(actual.cpu(), expected, atol=1e-5, rtol=1e-5)


def on_both(make):
    torch.manual_seed(0)
    on_axon = make("axon")
    torch.manual_seed(0)
    return on_axon, make("cpu")


WEIGHT = torch.randn(5, 4, generator=torch.Generator().manual_seed(3))

CASES = {
    "nested_tensor": lambda d: nested(d),
    "as_nested_tensor": lambda d: torch.nested.as_nested_tensor([t.to(d) for t in components((2, 3), (1, 3))]),
    "to_padded_tensor": lambda d: nested(d).to_padded_tensor(-1.0, (2, 4, 6)),
    "from_padded": lambda d: torch._nested_from_padded(torch.arange(24.0).reshape(2, 3, 4).to(d),
                                                       torch.tensor([[2, 4], [3, 4]])),
    "add_mul": lambda d: nested(d) * 2 + nested(d, seed=1),
    "elementwise_unary": lambda d: [f(nested(d)) for f in (torch.relu, torch.tanh, torch.nn.functional.gelu,
                                                           torch.nn.functional.silu, torch.abs)],
    "softmax": lambda d: torch.softmax(nested(d), -1),
    "layer_norm": lambda d: torch.nn.functional.layer_norm(nested(d), (4,), torch.ones(4, device=d) * 2,
                                                           torch.full((4,), 0.5, device=d)),
    "linear": lambda d: torch.nn.functional.linear(nested(d), WEIGHT.to(d)),
    "matmul": lambda d: torch.matmul(nested(d), nested(d).transpose(1, 2)),
    "bmm": lambda d: torch.bmm(nested(d), nested(d, (4, 2), (4, 5), seed=1)),
    "sum_keepdim": lambda d: nested(d).sum(-1, keepdim=True),
    "scaled_dot_product_attention": lambda d: torch.nn.functional.scaled_dot_product_attention(
        *[nested(d, (2, 3, 8), (2, 5, 8), seed=s) for s in range(3)]),
    "unbind": lambda d: list(nested(d).unbind()),
    "clone_contiguous_transpose": lambda d: nested(d).transpose(1, 2).contiguous(),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_operator_matches_the_cpu(name):
    actual, expected = on_both(CASES[name])
    assert_same(actual, expected)


def test_nested_tensor_lives_in_axon_memory_and_moves_back():
    tensor = nested("axon")
    assert tensor.is_nested and tensor.device.type == "axon"
    back = tensor.cpu()
    assert back.is_nested and back.device.type == "cpu"
    assert_same(tensor, back)


def test_components_are_views_and_in_place_ops_write_the_buffer():
    tensor = nested("axon")
    tensor.unbind()[1].fill_(7.0)  # a view of the nested tensor's own buffer, as on the CPU
    assert tensor.unbind()[1].eq(7.0).all().item()
    tensor.mul_(2)
    assert tensor.unbind()[1].eq(14.0).all().item()


def test_autograd_through_nested_operators():
    def gradients(device):
        inputs = nested(device, requires_grad=True)
        weight = WEIGHT.to(device).requires_grad_()
        hidden = torch.nn.functional.linear(inputs, weight)
        out = torch.softmax(hidden, -1) * hidden
        out.to_padded_tensor(0.0).pow(2).sum().backward()
        return [inputs.grad, weight.grad]

    actual, expected = on_both(gradients)
    assert_same(actual, expected)


def test_transformer_encoder_on_a_nested_batch_matches_the_padded_cpu_result():
    """Eval mode with a padding mask takes the nested-tensor fast path on both devices."""

    def encode(device):
        torch.manual_seed(0)
        layer = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
        encoder = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=True).to(device).eval()
        batch = torch.randn(3, 5, 16).to(device)
        padding = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [False] * 2 + [True] * 3]).to(device)
        with torch.no_grad():
            return encoder(batch, src_key_padding_mask=padding)

    actual, expected = on_both(encode)
    assert_same(actual, expected)


def test_save_and_load_a_nested_tensor():
    buffer = io.BytesIO()
    torch.save(nested("axon"), buffer)
    buffer.seek(0)
    assert_same(torch.load(buffer, weights_only=False), nested("cpu"))


def test_jagged_layout_eager_and_compiled():
    def run(device, compiled):
        tensor = torch.nested.nested_tensor(components((2, 4), (3, 4)), layout=torch.jagged, device=device)

        def f(x):
            return (x.sin() * 2 + 1).relu()

        function = torch.compile(f, backend="axon", fullgraph=True) if compiled else f
        return function(tensor).values()

    expected = run("cpu", False)
    assert_same(run("axon", False), expected)
    assert_same(run("axon", True), expected)


def test_nested_operators_queue_on_the_stream():
    """Device-generic nested operators compute through dense axon kernels: the call returns while the
    stream is held (a synchronizing implementation would wait for the gate and time out)."""
    result = run_python("""
        import warnings
        import torch, torch_axon
        warnings.simplefilter("ignore")
        x = torch.nested.nested_tensor([torch.ones(2, 4), torch.ones(3, 4)], device="axon")
        stream = torch.axon.current_stream()
        gate = torch_axon._C._testing.close_gate(stream.device_index, stream.stream_id)
        y = torch.softmax(torch.nn.functional.gelu(x * 2 + x), -1)
        queued = not stream.query()
        torch_axon._C._testing.open_gate(gate)
        print(queued, y.to_padded_tensor(0.0).sum().item())
    """, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    queued, total = result.stdout.split()
    assert queued == "True" and abs(float(total) - 5.0) < 1e-5
