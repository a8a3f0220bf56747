"""Errors the CPU raises at the call are raised at the call on axon.

CUDA raises every argument, dtype and shape error when an operator is
called; only errors that depend on the values (an index out of range) come
later, at the next synchronizing call. Axon follows CUDA: a check the CPU
kernel makes without looking at the data never ends up inside a queued task.
"""

import pytest
import torch
from conftest import requires_not_blocking, run_python


def axon(*shape, dtype=torch.float32):
    return torch.ones(shape, dtype=dtype, device="axon")


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: torch.add(axon(2), axon(2), alpha=True), RuntimeError, "Boolean alpha only supported"),
        (lambda: axon(3).index_select(0, torch.zeros(1, device="axon")), RuntimeError, "int32 or int64"),
        (lambda: axon(3) & axon(3), NotImplementedError, "not implemented for 'Float'"),
        (lambda: axon(1).expand(3).add_(1), RuntimeError, "more than one element of the written-to tensor"),
        (lambda: axon(3).atan2_(axon(2, 3)), RuntimeError, "doesn't match the broadcast shape"),
        (lambda: torch.acos(axon(), out=torch.empty(())), RuntimeError, "on the same device"),
        (lambda: axon(2, dtype=torch.int16).random_(-40000, 5), RuntimeError, "from is out of bounds for short int"),
        # out= being an input makes the call in-place, which cannot resize (ldexp_ is mul_out(self, self, ...)).
        (lambda: (lambda x: torch.mul(x, axon(5, 5), out=x))(axon(5, 1)), RuntimeError, "doesn't match the broadcast"),
        (lambda: axon(5, 1).ldexp_(axon(5, 5)), RuntimeError, "doesn't match the broadcast shape"),
        # Writing an expanded tensor: axon's own random and copy kernels make TensorIterator's checks.
        (lambda: axon(1).expand(6).bernoulli_(0.5), RuntimeError, "more than one element of the written-to tensor"),
        (lambda: axon(1).expand(6).uniform_(), RuntimeError, "more than one element of the written-to tensor"),
        (lambda: axon(1).expand(6).normal_(), RuntimeError, "more than one element of the written-to tensor"),
        (lambda: axon(1).expand(6).random_(), RuntimeError, "more than one element of the written-to tensor"),
        (lambda: axon(1).expand(6).copy_(axon(6)), RuntimeError, "more than one element of the written-to tensor"),
        (lambda: axon(1).expand(6).copy_(torch.ones(6)), RuntimeError, "more than one element of the written-to"),
        (lambda: (lambda x: x[:9].copy_(x[4:13]))(axon(18)), RuntimeError, "some elements of the input tensor and"),
        (lambda: torch.ops.aten._local_scalar_dense(axon(0)), RuntimeError, "Empty tensor not supported"),
        # The CPU refuses integer convolutions only for some algorithms (dilated ones).
        (lambda: torch.nn.functional.conv1d(axon(1, 1, 6, dtype=torch.int32), axon(1, 1, 2, dtype=torch.int32),
                                            dilation=2), NotImplementedError, "not implemented for 'Int'"),
    ],
    ids=["alpha", "float_index", "bitwise_float", "inplace_expanded", "inplace_resize", "cpu_out", "random_bounds",
         "out_is_input", "ldexp_", "bernoulli_expanded", "uniform_expanded", "normal_expanded", "random_expanded",
         "copy_expanded", "host_copy_expanded", "copy_partial_overlap", "empty_local_scalar_dense", "dilated_int_conv"],
)
def test_argument_errors_raise_at_the_call(call, error, message):
    with pytest.raises(error, match=message):
        call()
    torch.axon.synchronize()  # nothing left behind for a later, unrelated call


def test_the_same_call_shape_raises_every_time():
    for _ in range(3):
        with pytest.raises(RuntimeError, match="Boolean alpha"):
            torch.add(axon(5), axon(5), alpha=True)


def test_value_dependent_errors_stay_asynchronous_and_name_the_failing_operator():
    weights = torch.randn(4, 3, device="axon")
    if torch.axon.is_launch_blocking():
        with pytest.raises(IndexError):
            torch.nn.functional.embedding(torch.tensor([7], device="axon"), weights)
        return
    looked_up = torch.nn.functional.embedding(torch.tensor([7], device="axon"), weights)  # returns at once
    with pytest.raises(IndexError) as raised:
        looked_up.cpu()
    text = str(raised.value)
    assert text.startswith("aten::index_select: index out of range"), text  # the failing kernel first
    assert "raised by that kernel while it ran asynchronously" in text
    assert "AXON_LAUNCH_BLOCKING=1" in text


@requires_not_blocking
def test_integer_division_by_zero_values_stays_asynchronous():
    # Stand-ins of zeros fail for integer division; stand-ins of ones do not:
    # the refusal depends on values, so the call is queued as usual.
    quotient = torch.tensor([6, 4], device="axon") // torch.tensor([3, 2], device="axon")
    assert quotient.tolist() == [2, 2]


def test_result_dtype_follows_the_default_dtype():
    numerator = torch.tensor([3], dtype=torch.int16, device="axon")
    denominator = torch.tensor([2], dtype=torch.int16, device="axon")
    assert (numerator / denominator).dtype == torch.float32
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert (numerator / denominator).dtype == torch.float64
    finally:
        torch.set_default_dtype(previous)


def test_histc_takes_integers_as_cuda_does():
    # transformers' mixture-of-experts routing calls histc on int32 expert ids
    # on accelerators; the CPU kernel refuses integers, CUDA's does not.
    experts = torch.tensor([0, 1, 1, 3, 7, 7, 2], dtype=torch.int32)
    counts = torch.histc(experts.to("axon"), bins=8, min=0, max=7)
    assert counts.dtype == torch.int32
    assert counts.cpu().tolist() == torch.histc(experts.float(), bins=8, min=0, max=7).int().tolist()


def test_failed_backward_then_exit_does_not_abort():
    # The failing backward runs on autograd's axon thread; exiting right after
    # used to abort the process in most runs.
    code = """
        import torch
        a = torch.tensor([-1., 1.], device="axon", requires_grad=True)
        try:
            torch.nn.functional.elu_(a.clone(), alpha=-2).backward(torch.ones(2, device="axon"))
            torch.axon.synchronize()
        except RuntimeError:
            print("caught")
        """
    for _ in range(4):
        result = run_python(code)
        assert result.returncode == 0 and "caught" in result.stdout, result.stderr


@pytest.mark.parametrize("call", [
    lambda out: torch.add(axon(2), axon(2), out=out),  # C++ meta kernel
    lambda out: torch.acosh(axon(2), out=out),  # Python meta kernel
    lambda out: torch.cumsum(axon(2), 0, out=out),
], ids=["add", "acosh", "cumsum"])
def test_every_call_that_resizes_a_non_empty_out_tensor_warns(call):
    # The first call of a shape runs the meta kernel, which warns; later ones are answered from the
    # shape cache and must warn as the CPU does on every call (PyTorch's test_out_warning checks it).
    import warnings
    for attempt in range(3):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = call(torch.empty(5, device="axon"))
        resized = [w for w in caught if "was resized" in str(w.message)]
        assert len(resized) == 1, (attempt, [str(w.message) for w in caught])
        assert result.shape == (2,)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        call(torch.empty(0, device="axon"))  # an empty out= is resized silently, as on the CPU
        call(torch.empty(2, device="axon"))


def test_partial_overlap_raises_at_the_call_after_a_cached_non_overlapping_call():
    # Found by the fuzzer: the call-shape cache keyed only sizes and strides, so `x[1:].add_(x[:-1])` reused the
    # outcome of an earlier non-overlapping call of the same shapes and failed late, inside the queued kernel.
    a, b = torch.randn(10, device="axon"), torch.randn(10, device="axon")
    a[1:].add_(b[:-1])
    x = torch.randn(10, device="axon")
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        x[1:].add_(x[:-1])
    torch.axon.synchronize()  # nothing failed inside the device's queue
    y = torch.randn(10, device="axon")
    y[1:].add_(y[1:])  # exactly the same elements: allowed, as on the CPU
    torch.axon.synchronize()


# Checks the CPU makes at the call and CUDA too, reading values back (value_checks_at_call.h), or on scalar
# arguments: each raised later, or never, on axon (PyTorch's test_normal_std_error, test_uniform_from_to, test_histc,
# test_zeros_bounds_checking).
CPU_AND_CUDA_CHECKS = {
    "normal with a negative std element": lambda d: torch.normal(torch.zeros(2, device=d),
                                                                 torch.tensor([1.0, -1.0], device=d)),
    "normal float mean, negative std": lambda d: torch.normal(0.0, torch.tensor([-1.0], device=d)),
    "normal out=, negative std": lambda d: torch.normal(torch.zeros(2, device=d), torch.tensor([1.0, -1.0], device=d),
                                                        out=torch.empty(2, device=d)),
    "normal complex std": lambda d: torch.normal(torch.zeros(2, device=d), torch.ones(2, dtype=torch.cfloat, device=d)),
    "uniform_ range past float's largest": lambda d: torch.empty(4, device=d).uniform_(-3.4e38, 3.4e38),
    "uniform_ bound out of half's range": lambda d: torch.empty(4, dtype=torch.half, device=d).uniform_(-1e5, 0),
    "uniform_ complex range past float's largest": lambda d: torch.empty(4, dtype=torch.cfloat, device=d).uniform_(
        -3.4e38, 3.4e38),
    "histc of infinite data": lambda d: torch.histc(torch.tensor([1.0, float("inf")], device=d)),
    "histc of NaN data": lambda d: torch.histc(torch.tensor([float("nan")], device=d)),
    "histc out= of infinite data": lambda d: torch.histc(torch.tensor([float("-inf")], device=d),
                                                         out=torch.empty(100, device=d)),
    "zeros of a size below -2**62": lambda d: torch.zeros(-6744789213055875072, device=d),
    # The CPU alone: CUDA checks these in its kernels (csrc/ops/one_hot.cpp, value_checks_at_call.h).
    "masked_scatter_ with a short source": lambda d: torch.zeros(5, device=d).masked_scatter_(
        torch.tensor([True, False, True, True, False], device=d), torch.ones(2, device=d)),
    "masked_scatter with a short broadcast source": lambda d: torch.zeros(2, 3, device=d).masked_scatter(
        torch.tensor([True, False, True], device=d), torch.ones(3, device=d)),
    "one_hot of a negative class": lambda d: torch.nn.functional.one_hot(torch.tensor([3, 4, -1, 0], device=d), -1),
    "one_hot of a class past num_classes": lambda d: torch.nn.functional.one_hot(torch.tensor([3, 4, 1, 0], device=d),
                                                                                3),
    "one_hot with a negative num_classes": lambda d: torch.nn.functional.one_hot(torch.tensor([0], device=d), -5),
}


@pytest.mark.parametrize("case", sorted(CPU_AND_CUDA_CHECKS))
def test_value_and_bound_checks_raise_the_cpus_error_at_the_call(case):
    call = CPU_AND_CUDA_CHECKS[case]
    with pytest.raises(RuntimeError) as on_cpu:
        call("cpu")
    with pytest.raises(RuntimeError) as on_axon:
        call("axon")  # nothing waits after the call: a check left to the device's worker would not raise here
    assert str(on_axon.value).splitlines()[0] == str(on_cpu.value).splitlines()[0]


@pytest.mark.parametrize("classes", [[3, 0, 5, 1], [[0, 1, 2], [5, 4, 3]], 5], ids=["1d", "2d", "0d"])
@pytest.mark.parametrize("num_classes", [-1, 6])
def test_valid_one_hot_calls_agree_with_the_cpu_with_and_without_autograd(classes, num_classes):
    classes = torch.tensor(classes)
    expected = torch.nn.functional.one_hot(classes, num_classes)
    for mode in (torch.enable_grad, torch.no_grad, torch.inference_mode):
        with mode():
            result = torch.nn.functional.one_hot(classes.to("axon"), num_classes)
        assert result.device.type == "axon" and torch.equal(result.cpu(), expected)
    with pytest.raises(RuntimeError, match="LongTensor"):
        torch.nn.functional.one_hot(classes.int().to("axon"))
    empty = torch.nn.functional.one_hot(torch.zeros(0, 2, dtype=torch.long, device="axon"), 3)
    assert empty.shape == (0, 2, 3)


def test_one_hot_traces_with_symbolic_sizes():
    # Dynamo's fake tensors reach axon's one_hot kernel (registered before the Python key): it must not ask them
    # for values or an element count (fuzz seed 670416: "Cannot call numel() on tensor with symbolic sizes").
    function = torch.compile(lambda t: torch.nn.functional.one_hot(t, 5) * 2, backend="eager", dynamic=True)
    for n in (3, 4):
        classes = torch.arange(n) % 5
        assert torch.equal(function(classes.to("axon")).cpu(), torch.nn.functional.one_hot(classes, 5) * 2)


def test_valid_normal_and_histc_calls_still_agree_with_the_cpu():
    torch.manual_seed(0)
    draws = torch.normal(torch.zeros(1000, device="axon"), torch.full((1000,), 2.0, device="axon")).cpu()
    assert abs(draws.std().item() - 2.0) < 0.2
    data = torch.tensor([1.0, 2.0, 1.0, 7.0])
    assert torch.equal(torch.histc(data.to("axon"), bins=4).cpu(), torch.histc(data, bins=4))
