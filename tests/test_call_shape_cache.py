"""The generic kernel's cache of call outcomes (csrc/ops/shape_inference.cpp).

A call whose outcome is not cached runs the CPU kernel once on stand-ins of its
arguments; a call that differs from a cached one only in a Scalar's value (an
optimizer's step size changes every step) reuses the cached outcome when its
meta kernel agrees, so it pays no such run; and a call at new sizes whose
layout class (operator, dtypes, ranks, non-tensor values, dimensions of size 0,
1 or more, stride order, contiguity) an earlier CPU run proved to get exactly
the meta kernel's layouts runs its meta kernel alone.
"""

import os

import pytest
import torch
from conftest import run_python

import torch_axon


def _runs():
    return torch_axon._C._testing.reference_runs()


def test_a_new_scalar_value_reuses_the_cached_outcome():
    cpu = [torch.rand(4096, generator=torch.Generator().manual_seed(i)) + 0.5 for i in range(3)]
    a, b, c = (t.to("axon") for t in cpu)
    a.addcdiv_(b, c, value=0.25)
    cpu[0].addcdiv_(cpu[1], cpu[2], value=0.25)
    before = _runs()
    for step in range(1, 20):
        value = -1e-3 / (1 - 0.9 ** step)  # AdamW's bias-corrected step size
        a.addcdiv_(b, c, value=value)
        cpu[0].addcdiv_(cpu[1], cpu[2], value=value)
    assert _runs() == before
    torch.testing.assert_close(a.cpu(), cpu[0])


def test_each_scalar_value_gives_its_own_result():
    x = torch.linspace(-2, 2, 64)
    for value in (0.5, -1.25, 3.0):
        torch.testing.assert_close(torch.clamp(x.to("axon"), min=value).cpu(), torch.clamp(x, min=value))
        torch.testing.assert_close((x.to("axon") * value).cpu(), x * value)


@pytest.mark.parametrize("end", [4.5, 9.5, 2.5])
def test_scalar_values_that_change_the_output_shape_are_not_reused(end):
    torch.testing.assert_close(torch.arange(0.0, end, 0.5, device="axon").cpu(), torch.arange(0.0, end, 0.5))


@pytest.mark.parametrize("dtype, value", [(torch.float16, 1e10), (torch.float32, 1e300)])
def test_a_scalar_that_overflows_the_dtype_still_raises_at_the_call(dtype, value):
    x = torch.ones(8, dtype=dtype, device="axon")
    x.fill_(2.0)  # cached with an ordinary value first
    x.add_(x, alpha=0.5)
    with pytest.raises(RuntimeError, match="overflow") as cpu_error:
        torch.ones(8, dtype=dtype).fill_(value)
    with pytest.raises(type(cpu_error.value), match="overflow"):
        x.fill_(value)
    with pytest.raises(RuntimeError, match="overflow"):
        torch.ones(8, dtype=dtype).add_(torch.ones(8, dtype=dtype), alpha=value)
    with pytest.raises(RuntimeError, match="overflow"):
        x.add_(x, alpha=value)
    assert torch.equal(x.cpu(), torch.full((8,), 3.0, dtype=dtype))


def test_new_sizes_of_a_proven_layout_class_run_no_cpu_reference():
    torch.manual_seed(0)
    cpu = [torch.randn(n, 33) for n in range(5, 12)]
    torch.sin(cpu[0].to("axon"))  # proves the class (2-d, contiguous, both dimensions > 1)
    before = _runs()
    for x in cpu[1:]:
        torch.testing.assert_close(torch.sin(x.to("axon")).cpu(), torch.sin(x))
    assert _runs() == before


@pytest.mark.parametrize("base_shape, view", [
    ((1, 33), lambda t: t),             # a dimension of size 1
    ((0, 33), lambda t: t),             # an empty dimension
    ((33, 9), lambda t: t.t()),         # another stride order
    ((9, 66), lambda t: t[:, ::2]),     # not dense
])
def test_another_layout_class_runs_its_own_cpu_reference(base_shape, view):
    torch.cos(torch.randn(7, 33).to("axon"))
    base = torch.randn(base_shape)
    x, on_axon = view(base), view(base.to("axon"))
    before = _runs()
    result = torch.cos(on_axon)
    assert _runs() == before + 1
    torch.testing.assert_close(result.cpu(), torch.cos(x))
    assert result.stride() == torch.cos(x).stride()


LARGE_CALLS = {
    # Stand-ins of 64 MiB and more are zeros first (stand_ins.h): these calls' first runs are on zeros.
    "in place": lambda n, device: torch.full((n, 2048), 2.0, device=device).addcmul_(
        torch.full((n, 2048), 3.0, device=device), torch.full((n, 2048), 0.5, device=device), value=0.25
    ),
    "out=": lambda n, device: torch.mm(
        torch.full((n, 8), 0.5, device=device),
        torch.full((8, n), 0.25, device=device),
        out=torch.empty(n, n, device=device),
    ),
}


@pytest.mark.parametrize("call", list(LARGE_CALLS))
def test_a_large_first_call_proves_its_layout_class(call):
    # A first call this large computed the whole result on stand-ins on the calling thread, and, run on zeros, it
    # proved nothing: every later new size paid that again (a 64 MiB addcmul_ took 100 ms a call, 5 ms once proven).
    function = LARGE_CALLS[call]
    function(4200, "axon")
    before = _runs()
    for n in (4232, 4264):
        result, expected = function(n, "axon"), function(n, "cpu")
        assert result.stride() == expected.stride()
        torch.testing.assert_close(result.cpu(), expected)
    assert _runs() == before


_LARGE_FUNCTIONAL_CLASS_AT_NEW_SIZES = """
import torch, torch_axon
runs = torch_axon._C._testing.reference_runs


def softmax(rows, device):
    torch.manual_seed(rows)
    return torch.softmax(torch.randn(rows, 8192).to(device), -1)


softmax(2048, "axon")
for rows in (2080, 2112, 2144):
    before = runs()
    result, expected = softmax(rows, "axon"), softmax(rows, "cpu")
    same = result.stride() == expected.stride() and torch.allclose(result.cpu(), expected)
    print(rows, runs() - before, same)
"""


def test_a_large_functional_class_back_at_another_size_is_proven_on_varied_values():
    # Through its .out overload, whose results must be compared with the functional kernel's: a first call on
    # zeros proves nothing. The class's second size runs on varied values and proves it; the third runs no CPU
    # reference (a 64 MiB softmax at new sizes took 155 ms a call, 13 ms once proven, the CPU's own 31 ms).
    # In a fresh process: an earlier test may have proved the class at a small size.
    run = run_python(_LARGE_FUNCTIONAL_CLASS_AT_NEW_SIZES, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "1"}, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split("\n")[:3] == ["2080 1 True", "2112 0 True", "2144 0 True"], run.stdout



BROADCAST_CALLS = {
    # A mean's backward divides its gradient, expanded over the reduced dimensions.
    "divide": lambda g, other: g / 64,
    "add a dense tensor": lambda g, other: g + other,
    "multiply a channels-last tensor": lambda g, other: g * other.contiguous(memory_format=torch.channels_last),
    "clone": lambda g, other: g.clone(),
    "sum": lambda g, other: g.sum((2, 3)),
    "copy into a transposed tensor": lambda g, other: other.transpose(0, 1).copy_(g.transpose(0, 1)),
}


@pytest.mark.parametrize("call", list(BROADCAST_CALLS))
def test_new_sizes_of_a_broadcast_input_run_no_cpu_reference(call):
    # Expanded tensors (stride 0) are the gradients of reductions and broadcasts: every backward pass at a new
    # batch size has them. Their layout follows from sizes, stride order and which dimensions are broadcast.
    function = BROADCAST_CALLS[call]

    def arguments(batch, device):
        torch.manual_seed(batch)
        gradient = torch.randn(batch, 6, 1, 1)
        return gradient.to(device).expand(batch, 6, 5, 5), torch.randn(batch, 6, 5, 5).to(device)

    function(*arguments(3, "axon"))  # proves the class
    before = _runs()
    for batch in (4, 9, 17):
        result, expected = function(*arguments(batch, "axon")), function(*arguments(batch, "cpu"))
        assert result.stride() == expected.stride()
        torch.testing.assert_close(result.cpu(), expected)
    assert _runs() == before


def test_an_input_broadcast_along_other_dimensions_is_another_layout_class():
    x = torch.randn(4, 1, 5).to("axon")
    torch.exp(x.expand(4, 3, 5))
    before = _runs()
    y = torch.randn(1, 3, 5)
    result = torch.exp(y.to("axon").expand(4, 3, 5))
    assert _runs() == before + 1
    torch.testing.assert_close(result.cpu(), torch.exp(y.expand(4, 3, 5)))


def test_a_growing_attention_cache_runs_one_cpu_reference():
    """The decode-loop pattern: attention over one more key per step."""
    torch.manual_seed(0)
    q = torch.randn(1, 4, 1, 16)
    keys = [torch.randn(1, n, 4, 16).transpose(1, 2) for n in range(3, 9)]
    attend = torch.nn.functional.scaled_dot_product_attention
    first = keys[0].to("axon")  # .to keeps the transposed (heads-second) layout
    attend(q.to("axon"), first, first)
    before = _runs()
    for k in keys[1:]:
        on_axon = k.to("axon")
        result = attend(q.to("axon"), on_axon, on_axon)
        torch.testing.assert_close(result.cpu(), attend(q, k, k))
    assert _runs() == before


def test_kernels_that_choose_their_layout_from_strides_give_the_cpus_values():
    """reflection/replication padding lay their outputs out from the input's strides, a single
    dimension's and a sliced tensor's gaps included: none of these calls may reuse another's layout."""
    pad = torch.nn.functional.pad
    for h_stride in (3, 15):  # dense channels-last, only a single dimension's stride differs
        base = torch.arange(30.0).reshape(2, 5, 3).permute(0, 2, 1).unsqueeze(2)
        x = base.as_strided((2, 3, 1, 5), (15, 1, h_stride, 3))
        on_axon = base.to("axon").as_strided((2, 3, 1, 5), (15, 1, h_stride, 3))
        result, expected = pad(on_axon, [0, 0, 1, 1], mode="replicate"), pad(x, [0, 0, 1, 1], mode="replicate")
        assert result.stride() == expected.stride()
        torch.testing.assert_close(result.cpu(), expected)
    for width in (9, 10):  # channels-last, sliced along the width
        base = torch.arange(2 * 3 * 4 * width, dtype=torch.float32).reshape(2, 3, 4, width)
        x = base.contiguous(memory_format=torch.channels_last)[..., ::2]
        on_axon = base.to("axon").contiguous(memory_format=torch.channels_last)[..., ::2]
        result, expected = pad(on_axon, [1, 1, 1, 1], mode="reflect"), pad(x, [1, 1, 1, 1], mode="reflect")
        assert result.stride() == expected.stride()
        torch.testing.assert_close(result.cpu(), expected)


def _python_calls_during(function):
    """The Python meta kernels and references of torch that `function` calls."""
    import sys

    calls = []

    def profile(frame, event, arg):
        python_meta = ("_meta_registrations", "/_refs/", "/_prims", "/_decomp/")
        if event == "call" and any(part in frame.f_code.co_filename for part in python_meta):
            calls.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        function()
    finally:
        sys.setprofile(None)
    return calls


@pytest.mark.parametrize("operator",
                         ["cat", "mm", "add", "softmax", "attention", "layer_norm", "ones", "zero_", "embedding"])
def test_new_shapes_infer_outputs_with_the_cpus_cpp_meta_kernels(operator):
    # torch._meta_registrations (imported by torch._dynamo and transformers) puts Python meta kernels over
    # the C++ ones; through them a new shape of torch.cat cost about 200 us (a KV cache grows every step).
    import torch._meta_registrations  # noqa: F401

    inputs = {  # made outside the measured call: they run fill_, whose meta kernel is Python only
        "cat": lambda n: ([torch.ones(1, n, 8, device="axon"), torch.ones(1, 1, 8, device="axon")], 1),
        "mm": lambda n: (torch.ones(n, 8, device="axon"), torch.ones(8, 3, device="axon")),
        "add": lambda n: (torch.ones(n, 5, device="axon"), torch.ones(5, device="axon")),
        "softmax": lambda n: (torch.ones(2, n, device="axon"), -1),
        "attention": lambda n: tuple(torch.rand(1, 2, length, 8, device="axon") for length in (1, n, n)),
        "layer_norm": lambda n: (torch.ones(2, n, 8, device="axon"), (8,)),
        "ones": lambda n: (torch.empty(n, 8, device="axon"),),
        "zero_": lambda n: (torch.ones(n, 8, device="axon"),),
        "embedding": lambda n: (torch.arange(n, device="axon") % 5, torch.ones(5, 3, device="axon")),
    }[operator]
    function = {"cat": torch.cat, "mm": torch.mm, "add": torch.add, "softmax": torch.softmax,
                "attention": torch.nn.functional.scaled_dot_product_attention,
                "layer_norm": torch.nn.functional.layer_norm,
                "ones": lambda like: torch.ones(like.shape, device=like.device),
                "zero_": torch.Tensor.zero_, "embedding": torch.nn.functional.embedding}[operator]
    for n in (3, 4, 5):  # the first calls prove the layout class
        function(*inputs(n))
    arguments = inputs(40)
    result = []
    calls = _python_calls_during(lambda: result.append(function(*arguments)))
    assert calls == [], calls
    expected = {"cat": (1, 41, 8), "mm": (40, 3), "add": (40, 5), "softmax": (2, 40), "attention": (1, 2, 1, 8),
                "layer_norm": (2, 40, 8), "ones": (40, 8), "zero_": (40, 8), "embedding": (40, 3)}[
        operator]
    assert tuple(result[0].shape) == expected
    cpu_arguments = [[t.cpu() for t in a] if isinstance(a, list) else a.cpu() if isinstance(a, torch.Tensor) else a
                     for a in arguments]
    # Exact, but attention: its CPU kernel splits work by thread count, and small kernels run on one thread.
    exact = {} if operator == "attention" else {"rtol": 0, "atol": 0}
    torch.testing.assert_close(result[0].cpu(), function(*cpu_arguments), **exact)


def test_attention_backward_at_new_lengths_runs_no_python_meta_kernel():
    import torch._meta_registrations  # noqa: F401

    def step(length, device):
        torch.manual_seed(length)
        query, key, value = (torch.rand(1, 2, size, 8).to(device).requires_grad_() for size in (3, length, length))
        torch.nn.functional.scaled_dot_product_attention(query, key, value).sum().backward()
        return [t.grad.cpu() for t in (query, key, value)]

    for length in (3, 4, 5):  # the first calls prove the layout class
        step(length, "axon")
    gradients = []
    calls = _python_calls_during(lambda: gradients.append(step(40, "axon")))
    assert calls == [], calls
    for axon_gradient, cpu_gradient in zip(gradients[0], step(40, "cpu")):
        torch.testing.assert_close(axon_gradient, cpu_gradient)


def test_a_cpp_meta_kernel_raises_the_cpus_error_word_for_word():
    import torch._meta_registrations  # noqa: F401

    for device in ("cpu", "axon"):
        with pytest.raises(RuntimeError) as raised:
            torch.ones(2, 3, device=device) @ torch.ones(4, 5, device=device)
        if device == "cpu":
            cpu_message = str(raised.value)
    assert str(raised.value) == cpu_message


@pytest.mark.parametrize("case", ["contiguous", "transposed", "sliced", "mixed dtypes", "bfloat16"])
def test_layer_norm_at_new_sizes_has_the_cpus_layouts_and_values(case):
    import torch._meta_registrations  # noqa: F401

    def arguments(rows, device):
        torch.manual_seed(rows)
        dtype = torch.bfloat16 if case in ("mixed dtypes", "bfloat16") else torch.float32
        x = {"contiguous": lambda: torch.randn(2, rows, 8),
             "transposed": lambda: torch.randn(8, rows, 2).transpose(0, 2),
             "sliced": lambda: torch.randn(2, rows, 16)[..., ::2]}.get(case, lambda: torch.randn(2, rows, 8))()
        weight_dtype = torch.float32 if case == "mixed dtypes" else dtype
        weight, bias = (torch.randn(8).to(device, weight_dtype) for _ in range(2))
        return x.to(device, dtype), [8], weight, bias

    for rows in (3, 4, 5, 40):
        results = torch.ops.aten.native_layer_norm(*arguments(rows, "axon"), 1e-5)
        expected = torch.ops.aten.native_layer_norm(*arguments(rows, "cpu"), 1e-5)
        for result, cpu in zip(results, expected):
            assert (result.shape, result.stride(), result.dtype) == (cpu.shape, cpu.stride(), cpu.dtype)
            torch.testing.assert_close(result.cpu(), cpu)


def test_layer_norm_at_a_new_size_raises_the_cpus_error_at_the_call():
    import torch._meta_registrations  # noqa: F401

    for rows in (3, 4, 5):
        torch.nn.functional.layer_norm(torch.ones(2, rows, 8, device="axon"), (8,))
    messages = []
    for device in ("cpu", "axon"):
        with pytest.raises(RuntimeError) as raised:
            torch.ops.aten.native_layer_norm(torch.ones(2, 41, 8, device=device), [8], torch.ones(7, device=device),
                                             None, 1e-5)
        messages.append(str(raised.value))
    assert messages[0] == messages[1]


_POOLING_OVER_ONE_ELEMENT_PLANES = """
import itertools

import torch
import torch_axon

# Planes of one element: a stand-in index of 1 points past each plane, and past the last one, the end of the
# stand-in buffer. Each window (and each layout) is a call the generic kernel has not seen: one CPU run on stand-ins.
windows = [(1, 1, 0), (1, 2, 0), (2, 1, 1), (2, 2, 1), (3, 1, 1), (3, 2, 1), (3, 3, 1), (2, 3, 1)]
layouts = (torch.channels_last, torch.contiguous_format)
for memory_format, (kernel, stride, padding) in itertools.product(layouts, windows):
    x = torch.randn(3, 64, 1, 1).contiguous(memory_format=memory_format)
    axon_x = x.to("axon")
    window = ([kernel] * 2, [stride] * 2, [padding] * 2)
    output, indices = torch.ops.aten.max_pool2d_with_indices(axon_x, *window)
    gradient = torch.ops.aten.max_pool2d_with_indices_backward(
        torch.ones_like(output), axon_x, *window, [1, 1], False, indices)
    expected = torch.ops.aten.max_pool2d_with_indices_backward(
        torch.ones_like(output.cpu()), x, *window, [1, 1], False, indices.cpu())
    assert torch.equal(gradient.cpu(), expected), (memory_format, window)
print("done")
"""


def test_stand_in_indices_stay_in_range_of_one_element_planes():
    # The CPU's max pooling backward trusts its indices; the stand-ins of a call's first run at new sizes gave it
    # indices of 1 into planes of one element, and it wrote past the stand-in buffer (glibc then aborted with
    # "free(): invalid next size"). Index arguments' stand-ins are zeros now. A fresh process, with glibc's heap
    # checks on, so that an overrun aborts it (the check compares a byte past each block, which an overrun that adds
    # to a float can leave unchanged: the script makes sixteen such calls).
    environment = {"MALLOC_CHECK_": "3", "TORCH_DEVICE_BACKEND_AUTOLOAD": "1"}
    # glibc 2.34 and later check MALLOC_CHECK_ only with its debugging malloc loaded: it marks the end of each block
    # and free() aborts on a block whose mark was overwritten.
    debugging_malloc = "/lib/x86_64-linux-gnu/libc_malloc_debug.so.0"
    if os.path.exists(debugging_malloc):
        environment["LD_PRELOAD"] = debugging_malloc
    run = run_python(_POOLING_OVER_ONE_ELEMENT_PLANES, env=environment, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "done", run.stderr[-2000:]


_FIRST_CALLS_ON_A_LARGE_TENSOR = """
import resource, torch
elements = (256 << 20) + 5
a = torch.ones(elements, dtype=torch.int8, device="axon")
index = torch.tensor([-2, 0, -2, -1, 0, -1, 1], device="axon")
values = torch.tensor([6, 5, 6, 6, 5, 7, 11], dtype=torch.int8, device="axon")
torch.axon.synchronize()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
a.index_put_((index,), values, accumulate=True)
a.index_fill_(0, torch.tensor([2, 3], device="axon"), 3)
a.index_add_(0, torch.tensor([3, 4, 3], device="axon"), values[:3])
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
print(grown, [a[i].item() for i in (0, 1, 2, 3, 4, -2, -1)])
"""


def test_first_calls_on_a_large_tensor_take_host_memory_only_where_their_kernels_write():
    # Each call is its operator's first at these sizes: the CPU kernel runs on stand-ins of the 256 MiB tensor.
    # Those were filled with varied values through int64 temporaries, 17 bytes per int8 element (4.3 GiB here; a
    # 2 GiB tensor in PyTorch's own test_index_put_accumulate_large_tensor exhausted the host's 24 GiB). Stand-ins
    # this large are now zeros first, fresh pages that take memory only where a kernel writes.
    run = run_python(_FIRST_CALLS_ON_A_LARGE_TENSOR, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "1"}, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    grown, values = run.stdout.split(" ", 1)
    assert int(grown) < (128 << 20), f"host memory grew by {int(grown) >> 20} MiB"
    assert values.strip() == "[11, 12, 3, 15, 6, 13, 14]"


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16, torch.complex64, torch.bool])
def test_first_calls_of_every_dtype_give_the_cpus_results(dtype):
    # Stand-ins of these dtypes are now written in one pass, as float's always were.
    cpu = torch.arange(24).reshape(4, 6).to(dtype)
    index = torch.tensor([0, 2, 2])
    source = torch.ones(3, 6, dtype=dtype)
    got = cpu.to("axon").index_add(0, index.to("axon"), source.to("axon"), alpha=1) if dtype != torch.bool else \
        cpu.to("axon").index_copy(0, index.to("axon"), source.to("axon"))
    want = cpu.index_add(0, index, source, alpha=1) if dtype != torch.bool else cpu.index_copy(0, index, source)
    assert torch.equal(got.cpu(), want)
    assert got.stride() == want.stride()


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz,
                                   torch.float8_e5m2fnuz])
@pytest.mark.parametrize("operator", [lambda x, i: torch.index_select(x, 0, i), lambda x, i: torch.cat([x, x])],
                         ids=["index_select", "cat"])
def test_first_calls_on_float8_compare_their_out_variant_as_float(operator, dtype):
    # A first call compares its `.out` kernel's result with the functional kernel's; allclose has no float8
    # kernels, and index_select on float8 raised "mul_cpu_reduced_float" not implemented (PyTorch's
    # test_index_select).
    x = torch.tensor([1.0, 2.0, 3.0, 0.5, 1.5, 2.5]).to(dtype)
    index = torch.tensor([0, 2, 1, 1, 0])
    got = operator(x.to("axon"), index.to("axon")).cpu()
    assert torch.equal(got.view(torch.uint8), operator(x, index).view(torch.uint8))
