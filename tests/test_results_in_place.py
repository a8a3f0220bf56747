"""Kernels building their results in device memory (csrc/host_execution/results_in_place.h).

A CPU kernel with no out= kernel of its own (layer norm, convolution, every
operator whose `.out` is PyTorch's generated "functional, then copy") allocates
its results itself. On axon the CPU allocator hands it the outputs' memory for
allocations of exactly an output's size, and copies only what did not land in
place. The corner cases are driven here through a testing hook that runs a
Python "kernel" with its CPU allocations placed in given tensors; the device
tests check the operators that take this path against the CPU.
"""

import pytest
import torch
import torch.nn.functional as F

import torch_axon

place = torch_axon._C._testing.run_with_results_in_place


def test_a_result_of_the_destinations_size_is_built_in_it():
    destination = torch.zeros(4, 8)
    seen = {}

    def kernel():
        result = torch.empty(4, 8)
        seen["pointer"] = result.data_ptr()
        result.copy_(torch.arange(32.0).view(4, 8))
        return [result]

    place([destination], kernel)
    assert seen["pointer"] == destination.data_ptr()
    assert torch.equal(destination, torch.arange(32.0).view(4, 8))


def test_equal_sized_results_allocated_out_of_order_reach_their_own_destinations():
    first, second = torch.zeros(16), torch.zeros(16)

    def kernel():
        b = torch.full((16,), 2.0)  # allocated first: takes the first destination's memory
        a = torch.full((16,), 1.0)
        return [a, b]

    place([first, second], kernel)
    assert torch.equal(first, torch.full((16,), 1.0))
    assert torch.equal(second, torch.full((16,), 2.0))


def test_a_temporary_of_the_results_size_does_not_leak_into_the_destination():
    destination = torch.zeros(64)
    seen = {}

    def kernel():
        scratch = torch.full((64,), -7.0)  # takes the destination's memory
        seen["scratch"] = scratch.data_ptr()
        result = torch.empty(64)
        seen["result"] = result.data_ptr()
        result.copy_(scratch.abs() + torch.arange(64.0))
        return [result]

    place([destination], kernel)
    assert seen["scratch"] == destination.data_ptr() != seen["result"]
    assert torch.equal(destination, 7.0 + torch.arange(64.0))


def test_a_result_in_place_but_with_other_strides_is_rearranged():
    destination = torch.zeros(3, 5)  # row-major
    expected = torch.arange(15.0).view(3, 5)

    def kernel():
        result = torch.empty(5, 3).t()  # column-major, same bytes
        result.copy_(expected)
        return [result]

    place([destination], kernel)
    assert torch.equal(destination, expected)


def test_a_result_in_another_destinations_memory_with_its_layout_is_moved():
    small, large = torch.zeros(2, 6), torch.zeros(3, 4)  # 48 bytes each

    def kernel():
        a = torch.empty(3, 4)  # takes `small`'s memory
        b = torch.empty(6, 2).t()  # takes `large`'s memory, transposed
        a.copy_(torch.arange(12.0).view(3, 4))
        b.copy_(torch.arange(12.0).view(2, 6) + 100)
        return [b, a]

    place([small, large], kernel)
    assert torch.equal(small, torch.arange(12.0).view(2, 6) + 100)
    assert torch.equal(large, torch.arange(12.0).view(3, 4))


def test_a_destination_that_is_not_dense_is_only_copied_into():
    base = torch.zeros(4, 8)
    destination = base[:, ::2]
    seen = {}

    def kernel():
        result = torch.ones(4, 4)
        seen["pointer"] = result.data_ptr()
        return [result]

    place([destination], kernel)
    assert seen["pointer"] != destination.data_ptr()
    assert torch.equal(base[:, ::2], torch.ones(4, 4)) and torch.equal(base[:, 1::2], torch.zeros(4, 4))


def test_allocations_outside_the_kernel_are_not_placed():
    destination = torch.zeros(32)
    place([destination], lambda: [torch.ones(32)])
    after = torch.empty(32)
    assert after.data_ptr() != destination.data_ptr()
    assert torch.equal(destination, torch.ones(32))


def test_a_failing_kernel_leaves_the_allocator_as_it_was():
    destination = torch.zeros(8)

    def kernel():
        torch.empty(8)
        raise RuntimeError("kernel failed")

    with pytest.raises(RuntimeError, match="kernel failed"):
        place([destination], kernel)
    assert torch.empty(8).data_ptr() != destination.data_ptr()


@pytest.mark.parametrize("memory_format", [torch.contiguous_format, torch.channels_last])
def test_layer_norm_and_convolution_on_axon_match_the_cpu(memory_format):
    torch.manual_seed(0)
    images = torch.randn(4, 6, 9, 9).to(memory_format=memory_format)
    weight = torch.randn(8, 6, 3, 3, requires_grad=True)
    rows = torch.randn(64, 48, requires_grad=True)
    gamma = torch.randn(48, requires_grad=True)
    results = {}
    for device in ("cpu", "axon"):
        w = weight.detach().to(device).requires_grad_()
        r = rows.detach().to(device).requires_grad_()
        g = gamma.detach().to(device).requires_grad_()
        out = F.conv2d(images.to(device), w, padding=1)
        normed = F.layer_norm(r, (48,), g)
        mean_rstd = torch.native_layer_norm(r, (48,), g, None, 1e-5)
        (out.square().sum() + normed.pow(3).sum()).backward()
        results[device] = [out, normed, *mean_rstd, w.grad, r.grad, g.grad]
    for cpu, axon in zip(results["cpu"], results["axon"]):
        assert axon.device.type == "axon"
        assert axon.stride() == cpu.stride()
        torch.testing.assert_close(axon.cpu(), cpu, rtol=1e-4, atol=1e-4)


def test_operators_whose_out_variant_is_generated_match_the_cpu():
    torch.manual_seed(0)
    table = torch.randn(100, 16)
    tokens = torch.randint(0, 100, (7, 5))
    values = torch.randn(6, 10)
    for device in ("cpu", "axon"):
        t, k, v = table.to(device), tokens.to(device), values.to(device)
        got = [F.embedding(k, t), *torch.sort(v, dim=1), *torch.native_dropout(v, 0.0, True),
               torch.native_group_norm(values.view(6, 10, 1).to(device), None, None, 6, 10, 1, 2, 1e-5)[0]]
        if device == "cpu":
            expected = got
        else:
            for a, e in zip(got, expected):
                assert a.stride() == e.stride()
                torch.testing.assert_close(a.cpu(), e)


def test_a_buffer_taken_through_the_raw_interface_never_frees_destination_memory():
    # oneDNN allocates through the CPU allocator's raw interface; a buffer of the destination's size takes
    # its memory, and is freed after the kernel, through raw_deleter. Freeing destination memory with
    # free() would corrupt the heap (this crashed before destination memory was tracked process-wide).
    destination = torch.zeros(256)
    kept = {}
    source = torch.randn(257)[:256]

    def kernel():
        kept["mkldnn"] = source.to_mkldnn()
        return [source * 2]

    place([destination], kernel)
    torch.testing.assert_close(destination, source * 2)
    del kept["mkldnn"]
    del destination
    assert all(torch.equal(torch.full((256,), float(i)), torch.full((256,), float(i))) for i in range(8))


@pytest.mark.parametrize("transform", ["rfft", "irfft", "fft", "ifft", "hfft", "rfft2"])
def test_ffts_whose_out_kernel_copies_build_their_results_in_place_and_match_the_cpu(transform):
    # The MKL FFTs' `.out` kernels compute the functional result and copy it into out=;
    # axon runs their functional kernels instead (ops/operator_plan.cpp).
    x = torch.randn(64, 130, dtype=torch.float64)
    if transform in ("irfft", "ifft", "hfft"):
        x = torch.complex(x, torch.randn_like(x))
    fn = getattr(torch.fft, transform)
    assert torch.equal(fn(x.to("axon")).cpu(), fn(x))


def test_a_result_allocated_after_a_dropped_one_of_its_size_is_built_in_place_from_the_second_call():
    # The CPU's batch norm backward allocates its input gradient twice and returns the second.
    seen = []

    def kernel():
        dropped = torch.empty(256)
        result = torch.empty(256)
        del dropped
        seen.append(result.data_ptr())
        return [result.copy_(torch.arange(256.0))]

    for call in range(3):
        destination = torch.zeros(256)
        place([destination], kernel, call_site=1001)
        assert torch.equal(destination, torch.arange(256.0))
        assert (seen[-1] == destination.data_ptr()) == (call > 0), call
    destination = torch.zeros(256)
    place([destination], kernel)  # no call site: nothing learned, nothing guessed
    assert seen[-1] != destination.data_ptr() and torch.equal(destination, torch.arange(256.0))


def test_a_wrong_guess_is_copied_and_learned_again():
    allocations = {"count": 2}
    seen = []

    def kernel():
        made = [torch.full((64,), float(i)) for i in range(allocations["count"])]
        seen.append(made[-1].data_ptr())
        return [made[-1]]

    for count, in_place in ((2, False), (2, True), (1, False), (1, True)):
        allocations["count"] = count
        destination = torch.zeros(64)
        place([destination], kernel, call_site=1002)
        assert torch.equal(destination, torch.full((64,), float(count - 1)))
        assert (seen[-1] == destination.data_ptr()) == in_place, count


def test_batch_norm_backward_builds_its_input_gradient_in_place_and_matches_the_cpu():
    copied = torch_axon._C._testing.results_copied
    x, grad = torch.randn(8, 16, 12, 12), torch.randn(8, 16, 12, 12)
    weight, running_mean, running_var = torch.randn(16), torch.zeros(16), torch.ones(16)
    _, save_mean, save_invstd = torch.ops.aten.native_batch_norm(x, weight, None, running_mean, running_var, True,
                                                                 0.1, 1e-5)
    arguments = (grad, x, weight, running_mean, running_var, save_mean, save_invstd, True, 1e-5, [True, True, True])
    expected = torch.ops.aten.native_batch_norm_backward(*arguments)
    on_axon = [a.to("axon") if isinstance(a, torch.Tensor) else a for a in arguments]
    torch.ops.aten.native_batch_norm_backward(*on_axon)  # the first call learns which allocation is returned
    torch.axon.synchronize()
    before = copied()
    results = torch.ops.aten.native_batch_norm_backward(*on_axon)
    torch.axon.synchronize()
    assert copied() == before
    for result, cpu in zip(results, expected):
        assert torch.equal(result.cpu(), cpu)
