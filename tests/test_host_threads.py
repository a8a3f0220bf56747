"""Which host threads run CPU kernels in parallel: only the device's worker, so libgomp keeps spinning."""

import pytest
import torch
from conftest import requires_not_blocking, run_python

pytestmark = requires_not_blocking


@pytest.mark.skipif(torch.get_num_threads() < 2, reason="parallel kernels need at least two intra-op threads")
def test_working_out_a_new_shape_starts_no_openmp_team_on_the_calling_thread():
    # A fresh process: another test's CPU work would already have given the main thread a team.
    result = run_python(
        """
        import os
        import torch
        import torch.nn.functional as F

        def threads():
            return len(os.listdir("/proc/self/task"))

        x = torch.randn(8, 128, 256, device="axon")
        (x + x).sum().item()  # the worker's own parallel kernels start its helpers
        before = threads()
        # New operators and shapes: their output layouts are worked out on this thread,
        # with the CPU kernels run on stand-ins of these sizes (parallel on the CPU).
        F.gelu(x).sum().item()
        x.view(1024, 256).softmax(-1).sum().item()
        F.layer_norm(x, (256,)).sum().item()
        print(before, threads())
        """,
        env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "1"},
    )
    assert result.returncode == 0, result.stderr
    before, after = map(int, result.stdout.split())
    assert after == before, "a new thread started while the calling thread worked out output layouts"



@pytest.mark.skipif(torch.get_num_threads() < 2, reason="parallel kernels need at least two intra-op threads")
def test_operators_whose_results_depend_on_the_data_start_no_openmp_team_on_the_calling_thread():
    # Such operators drain the stream and run the CPU kernel while the caller waits; run on the calling
    # thread, a parallel kernel left it a team of helpers, and libgomp let the worker's helpers sleep for good.
    result = run_python(
        """
        import os
        import threading
        import torch

        def threads():
            return len(os.listdir("/proc/self/task"))

        # The CPU's answers first, on a thread of their own that ends (with its team, if its kernels made one).
        def reference():
            cpu = torch.randn(1 << 20)
            counts = (cpu.abs() * 50).long()
            return [cpu, counts, torch.masked_select(cpu, cpu > 0), torch.unique(counts), torch.bincount(counts)]

        answers = []
        thread = threading.Thread(target=lambda: answers.extend(reference()))
        thread.start()
        thread.join()
        cpu, counts, *expected = answers
        x, axon_counts = cpu.to("axon"), counts.to("axon")
        (x + x).sum().item()  # the worker's own parallel kernels start its helpers
        before = threads()
        results = [torch.masked_select(x, x > 0), torch.unique(axon_counts), torch.bincount(axon_counts)]
        torch.axon.synchronize()
        after = threads()
        print(before, after, all(torch.equal(a.cpu(), c) for a, c in zip(results, expected)))
        """,
        env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "1"},
    )
    assert result.returncode == 0, result.stderr
    before, after, equal = result.stdout.split()
    assert equal == "True"
    assert int(after) == int(before), "a new thread started while an operator's CPU kernel ran for the calling thread"


def test_an_operator_run_while_the_caller_waits_raises_and_warns_on_the_calling_thread():
    import warnings

    x = torch.tensor([0.0, 1.0, 2.0, 0.0, 3.0], device="axon")
    out = torch.empty(7, 1, dtype=torch.long, device="axon")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.nonzero(x, out=out)  # resizes a non-empty out= argument: the CPU kernel warns
    assert [str(w.message) for w in caught if "resized" in str(w.message)], [str(w.message) for w in caught]
    assert out.cpu().flatten().tolist() == [1, 2, 4]
    with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative integral inputs"):
        torch.bincount(torch.tensor([-1, 2], device="axon"))
    assert torch.bincount(torch.tensor([1, 2, 2], device="axon")).cpu().tolist() == [0, 1, 2]

_IDLE_SPIN = """
import resource, statistics, time
import torch
from torch_axon._C import _testing

def idle_cpu_ms():
    # Process CPU time over 100 ms in which the device is idle, right after a parallel kernel of its worker:
    # what the worker's OpenMP helper spends spinning for the next kernel.
    samples = []
    for _ in range(5):
        (x * 2).sum().item()
        usage = resource.getrusage(resource.RUSAGE_SELF)
        start = usage.ru_utime + usage.ru_stime
        time.sleep(0.1)
        usage = resource.getrusage(resource.RUSAGE_SELF)
        samples.append((usage.ru_utime + usage.ru_stime - start) * 1e3)
    return samples

x = torch.randn(2048, 2048, device="axon")
# The most of five rounds before: on a busy host a spinning helper may wait for a core through a round (one CI
# run measured a median of 0.98 ms); the median after, which must stay low in every round but outliers.
before = max(idle_cpu_ms())
parked_before = _testing.cores_freed_for_compiled_code()
torch.compile(lambda t: t + 1, backend="axon")(torch.randn(4, device="axon"))
torch.axon.synchronize()
time.sleep(0.05)
print(before, parked_before, statistics.median(idle_cpu_ms()), _testing.cores_freed_for_compiled_code())
"""


@pytest.mark.skipif(torch.get_num_threads() < 2, reason="parallel kernels need at least two intra-op threads")
def test_a_compiled_executable_makes_the_workers_openmp_helper_stop_spinning():
    # XLA:CPU runs executables on threads of its own, which a spinning helper would take a core from
    # (host_execution/compiled_code_cores.h). Eager-only processes keep the spin.
    result = run_python(_IDLE_SPIN, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "1"})
    assert result.returncode == 0, result.stderr
    before, parked_before, after, parked_after = result.stdout.split()
    assert parked_before == "False" and parked_after == "True"
    assert float(before) > 1.5, f"the helper spent {before} ms spinning before any executable: expected it to spin"
    assert float(after) < 1.0, f"the helper spent {after} ms of 100 idle ms spinning after an executable loaded"


_PARKED_HELPERS = """
import os, statistics, threading, time
import torch
from torch_axon._C import _testing

def cpu_ns():
    # The CPU time of this process's threads, from the scheduler's own count (getrusage's is sampled by ticks),
    # less this thread's: it only sleeps, and reading /proc cost it 0.3-0.5 ms, up to 1.5 ms on a busy host.
    total = 0
    for thread in os.listdir("/proc/self/task"):
        if int(thread) == threading.get_native_id():
            continue
        try:
            with open(f"/proc/self/task/{thread}/schedstat") as stats:
                total += int(stats.read().split()[0])
        except OSError:
            pass  # the thread ended
    return total

def idle_cpu_ms():
    # Process CPU time over 100 ms in which the device is idle.
    start = cpu_ns()
    time.sleep(0.1)
    return (cpu_ns() - start) / 1e6

x = torch.rand(1024, 1024, device="axon") * 1.8 - 0.9
small = torch.randn(65536, device="axon")  # 256 KiB: run on the worker, on its thread alone
samples, parked = [], []
for _ in range(3):
    (x * 2).sum().item()  # parallel kernels: the helper spins after them
    before = _testing.helper_parkings()
    start, calls = time.perf_counter(), 0
    while time.perf_counter() - start < 0.003 or calls < 50:  # then 3 ms of single-thread kernels, or more
        (small + 1)[-1].item()  # (a sum of it would take the team: test_thread_count_results.py)
        calls += 1
    samples.append(idle_cpu_ms())
    parked.append(_testing.helper_parkings() - before)
# While parked: a costly kernel under 1 MiB runs alone, a larger one releases the helpers.
rows = x[:64]  # 256 KiB in, 256 out
tanh, doubled = torch.tanh(rows), x * 3
(x * 2).sum().item()
after_release = idle_cpu_ms()
print(min(parked), statistics.median(samples), after_release,
      torch.equal(tanh.cpu(), torch.tanh(rows.cpu())), torch.equal(doubled.cpu(), x.cpu() * 3))
"""


@pytest.mark.skipif(torch.get_num_threads() < 2, reason="parallel kernels need at least two intra-op threads")
def test_a_worker_that_goes_on_alone_parks_its_openmp_helpers():
    # After a parallel kernel libgomp's helper spins for milliseconds; once the worker has run kernels alone
    # for 1 ms with the helper still spinning, the helper is parked (host_execution/openmp_helper_parking.h)
    # and takes no CPU, until a kernel wants the team again.
    result = run_python(_PARKED_HELPERS, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "1"})
    assert result.returncode == 0, result.stderr
    parked, idle, after_release, tanh_equal, doubled_equal = result.stdout.split()
    assert int(parked) >= 1, "the helper was not parked after 3 ms of single-thread kernels"
    assert float(idle) < 1.0, f"the process spent {idle} ms of 100 idle ms on CPU with its helper parked"
    assert float(after_release) > 1.5, f"{after_release} ms: the released helper should spin after a parallel kernel"
    assert tanh_equal == "True" and doubled_equal == "True"


def test_small_kernels_run_on_one_thread_and_costly_ones_with_the_team():
    # Below 1 MiB a kernel runs on one thread (waking a helper costs more than it gives back), except kernels
    # whose work is far above their bytes: topk took 5-7x longer on one thread (docs/benchmarks.md, stop 50);
    # erfinv, tanh, log1p, ... on 65,536 floats 2x, LAPACK factorizations and solves 1.3-2x (stop 57).
    import torch_axon

    launches = torch_axon._C._testing.single_thread_launches
    x = torch.rand(256, 256, device="axon") * 1.8 - 0.9
    matrix = torch.randn(128, 128, device="axon") + 128 * torch.eye(128, device="axon")
    host, host_matrix = x.cpu(), matrix.cpu()
    cases = [
        (lambda x, m: torch.abs(x), 1),
        (lambda x, m: x.topk(16, -1), 0),
        (lambda x, m: torch.erfinv(x), 0),
        (lambda x, m: torch.tanh(x), 0),
        (lambda x, m: torch.nn.functional.adaptive_avg_pool2d(x.view(4, 4, 64, 64), 7), 0),
        (lambda x, m: torch.log1p(x.abs()), 1),  # abs on one thread
        (lambda x, m: torch.pow(x, 2), 1),  # pow's common exponents are a product or a square root
        (lambda x, m: torch.linalg.inv(m), 1),  # the error check's any() on one thread
        (lambda x, m: torch.linalg.cholesky(m @ m.mT), 1),  # the error check's any() on one thread
        (lambda x, m: torch.fft.rfft(x), 1),  # FFTs stay on one thread (operator_plan.cpp says why)
    ]
    for index, (call, serial) in enumerate(cases):
        torch.axon.synchronize()
        before = launches()
        result = call(x, matrix)
        torch.axon.synchronize()
        assert launches() - before == serial, (index, launches() - before)
        expected = call(host, host_matrix)
        if isinstance(result, tuple):
            for got, want in zip(result, expected):
                assert torch.equal(got.cpu(), want)
        else:
            torch.testing.assert_close(result.cpu(), expected, rtol=1e-5, atol=1e-5)
    in_place = x.clone()
    torch.axon.synchronize()
    before = launches()
    in_place.exp_()  # the in-place form of a listed function too
    torch.axon.synchronize()
    assert launches() == before
    assert torch.equal(in_place.cpu(), host.exp())


@pytest.mark.skipif(torch.get_num_threads() < 2, reason="parallel kernels need at least two intra-op threads")
def test_products_below_a_mebibyte_take_the_team_only_while_the_program_waits():
    # A 64x256 by 256x256 product covers 384 KiB and does 4M multiply-adds: the team pays for it when the
    # program's thread has left its core (a synchronize), not while that thread runs beside the worker
    # (host_execution/stream_launch.h, LaunchThreads).
    import threading

    import torch_axon

    testing = torch_axon._C._testing
    a, b = torch.randn(64, 256), torch.randn(256, 256)
    x, y = a.to("axon"), b.to("axon")
    stream = torch.axon.current_stream()
    torch.axon.synchronize()

    # Queued behind a closed gate, then run while this thread polls the stream without waiting.
    gate = testing.close_gate(stream.device_index, stream.stream_id)
    alone, team = testing.team_for_work_runs()
    running = [x @ y for _ in range(12)]
    testing.open_gate(gate)
    while not stream.query():
        pass
    after_running = testing.team_for_work_runs()
    assert (after_running[0] - alone, after_running[1] - team) == (12, 0)

    # Queued behind a gate another thread opens while this one synchronizes. More than 8 wait, so helpers
    # parked by the kernels above are released too.
    gate = testing.close_gate(stream.device_index, stream.stream_id)
    waited = [x @ y for _ in range(12)]
    opener = threading.Timer(0.05, testing.open_gate, args=(gate,))
    opener.start()
    torch.axon.synchronize()
    opener.join()
    after_waiting = testing.team_for_work_runs()
    assert (after_waiting[0] - after_running[0], after_waiting[1] - after_running[1]) == (0, 12)

    expected = a @ b
    for product in running + waited:
        torch.testing.assert_close(product.cpu(), expected)


@pytest.mark.skipif(torch.get_num_threads() < 2, reason="parallel kernels need at least two intra-op threads")
@pytest.mark.parametrize("wait", ["item", "cpu", "synchronize"])
def test_a_program_reading_a_value_back_waits_as_a_synchronize_does(wait):
    # A training loop waits for its step in `loss.item()`: while that read blocks, the program's core is
    # free, so products queued before it take the team as they do during a synchronize.
    import threading

    import torch_axon

    testing = torch_axon._C._testing
    a, b = torch.randn(64, 256), torch.randn(256, 256)
    x, y = a.to("axon"), b.to("axon")
    stream = torch.axon.current_stream()
    torch.axon.synchronize()

    gate = testing.close_gate(stream.device_index, stream.stream_id)
    alone, team = testing.team_for_work_runs()
    products = [x @ y for _ in range(12)]
    total = products[-1].sum()
    opener = threading.Timer(0.05, testing.open_gate, args=(gate,))
    opener.start()
    if wait == "item":
        value = total.item()
    elif wait == "cpu":
        value = total.cpu().item()
    else:
        torch.axon.synchronize()
        value = total.cpu().item()
    opener.join()
    after = testing.team_for_work_runs()
    assert (after[0] - alone, after[1] - team) == (0, 12)

    expected = a @ b
    assert value == pytest.approx(expected.sum().item(), rel=1e-4)
    for product in products:
        torch.testing.assert_close(product.cpu(), expected)


def test_attention_runs_with_the_team_by_its_multiply_adds():
    # A causal 1x4x128x64 attention covers 0.5 MiB and does 4.2M multiply-adds: 165 us on one thread against
    # the CPU's 106-113 on two (host_execution/direct_attention.cpp). A 1x1x16x16 one stays on one thread.
    import torch.nn.functional as F

    import torch_axon

    launches = torch_axon._C._testing.single_thread_launches
    for shape, serial in (((1, 4, 128, 64), 0), ((1, 1, 16, 16), 1)):
        q, k, v = (torch.randn(shape) for _ in range(3))
        on_axon = [t.to("axon") for t in (q, k, v)]
        torch.axon.synchronize()
        before = launches()
        result = F.scaled_dot_product_attention(*on_axon, is_causal=True)
        torch.axon.synchronize()
        assert launches() - before == serial, (shape, launches() - before)
        torch.testing.assert_close(result.cpu(), F.scaled_dot_product_attention(q, k, v, is_causal=True))


@pytest.mark.parametrize("name,call", [
    ("addmm", lambda a, b, bias: torch.addmm(bias, a, b)),
    ("mm", lambda a, b, bias: a @ b),
    ("bmm", lambda a, b, bias: torch.bmm(a.unsqueeze(0), b.unsqueeze(0))),
])
def test_products_of_eight_rows_and_more_run_with_the_team_and_thinner_ones_on_one_thread(name, call):
    # A product's work grows with m·k·n, not with the bytes it covers: a 16×256 by 256×768 product took 53 µs on
    # two threads and 80 on one; matrix-vector products are faster on one (host_execution/matrix_products.h).
    import torch_axon

    launches = torch_axon._C._testing.single_thread_launches
    bias = torch.randn(768, device="axon")
    for rows, serial in ((16, 0), (4, 1)):
        a, b = torch.randn(rows, 256, device="axon"), torch.randn(256, 768, device="axon")
        torch.axon.synchronize()
        before = launches()
        result = call(a, b, bias)
        torch.axon.synchronize()
        assert launches() - before == serial, (rows, launches() - before)
        torch.testing.assert_close(result.cpu(), call(a.cpu(), b.cpu(), bias.cpu()))


@pytest.mark.parametrize("name,call", [
    ("addmm", lambda a, b, bias: torch.addmm(bias, a, b)),
    ("mm", lambda a, b, bias: a @ b),
])
def test_products_large_enough_for_onednn_run_with_the_team_below_a_mebibyte(name, call):
    # 128x128 by 128x512 (8.4M multiply-adds) covers 0.6 MiB; on one thread it took 86-90 us, on two 54-56
    # (docs/benchmarks.md, stop 57). Hosts with AVX-512 send it to oneDNN, others to MKL: the team either way.
    import torch_axon

    launches = torch_axon._C._testing.single_thread_launches
    a, b, bias = (torch.randn(128, 128, device="axon"), torch.randn(512, 128, device="axon").t(),
                  torch.randn(512, device="axon"))
    torch.axon.synchronize()
    before = launches()
    result = call(a, b, bias)
    torch.axon.synchronize()
    assert launches() == before
    torch.testing.assert_close(result.cpu(), call(a.cpu(), b.cpu(), bias.cpu()))


@pytest.mark.parametrize("backward", [False, True])
def test_convolutions_run_with_the_team_by_their_multiply_adds_not_their_bytes(backward):
    # A 7x7 depthwise convolution over 8x32x16x16 floats covers 0.25 MiB and does 3.2M multiply-adds; on one
    # thread its backward took 700 us against the CPU's 390-440 (host_execution/convolution.cpp). A dense 3x3
    # convolution of 8x16x16x16 (4.7M) takes the team too; one of 4x16x8x8 (0.6M) stays on one thread.
    import torch.nn.functional as F

    import torch_axon

    def run(x, w, grad, groups, padding):
        if not backward:
            return F.conv2d(x, w, None, 1, padding, 1, groups)
        return torch.ops.aten.convolution_backward(grad, x, w, [w.shape[0]], [1, 1], [padding] * 2, [1, 1], False,
                                                   [0, 0], groups, [True, True, True])

    launches = torch_axon._C._testing.single_thread_launches
    cases = ((torch.randn(8, 32, 16, 16).to(memory_format=torch.channels_last), torch.randn(32, 1, 7, 7), 32, 3, 0),
             (torch.randn(8, 16, 16, 16), torch.randn(16, 16, 3, 3), 1, 1, 0),
             (torch.randn(4, 16, 8, 8), torch.randn(16, 16, 3, 3), 1, 1, 1))
    for x, w, groups, padding, serial in cases:
        grad = torch.randn(x.shape[0], w.shape[0], x.shape[2], x.shape[3])
        expected = run(x, w, grad, groups, padding)
        operands = [t.to("axon") for t in (x, w, grad)]
        torch.axon.synchronize()
        before = launches()
        result = run(*operands, groups, padding)
        torch.axon.synchronize()
        assert launches() - before == serial, (tuple(x.shape), launches() - before)
        # Sums over the batch in another order than the CPU's threads take: float rounding apart.
        torch.testing.assert_close([r.cpu() for r in result] if backward else result.cpu(),
                                   list(expected) if backward else expected, rtol=1e-4, atol=1e-4)


def test_a_broadcast_operand_counts_every_element_it_presents():
    # An expanded tensor covers a few bytes of memory but a kernel reads each of its elements: a bicubic
    # upsampling's backward over an expanded gradient of ones took 8.5 ms on one thread against 4.3 on two.
    import torch_axon

    launches = torch_axon._C._testing.single_thread_launches
    one = torch.ones((), device="axon")
    small = torch.randn(16, 512, device="axon")
    torch.axon.synchronize()
    for operand, serial in ((one.expand(1024, 512), 0), (small, 1)):
        before = launches()
        result = operand.sum(0)
        torch.axon.synchronize()
        assert launches() - before == serial
        torch.testing.assert_close(result.cpu(), operand.cpu().sum(0))


@pytest.mark.skipif(torch.get_num_threads() < 2, reason="parallel kernels need at least two intra-op threads")
@pytest.mark.parametrize("released", [True, False])
def test_a_program_threads_own_openmp_team_ends_when_it_queues_team_kernels(released):
    # A fresh process, its main thread without a team until the script gives it one.
    result = run_python(
        f"""
        import os, time
        import torch
        from torch_axon import _C

        def threads():
            return len(os.listdir("/proc/self/task"))

        _C._testing.set_program_thread_team_releases_enabled({released})
        x = torch.randn(1 << 20, device="axon")
        torch.relu(x).sum().item()  # the worker's team, and the release's first wait, are behind us
        time.sleep(0.01)
        before = threads()
        # A parallel CPU operator, as loading a checkpoint on the CPU runs: the main thread's own team.
        weights = torch.randn(1 << 21)
        loaded = torch.empty_like(weights).copy_(weights)
        with_team = threads()
        time.sleep(0.01)
        releases = _C._testing.program_thread_team_releases()
        torch.relu(x).sum().item()  # 4 MiB: a kernel the worker runs with its team
        after = threads()
        # The thread's CPU operators still run in parallel, with the same team size, and agree.
        assert torch.get_num_threads() >= 2
        assert torch.equal(torch.relu(loaded), weights.clamp_min(0))
        print(before, with_team, after, _C._testing.program_thread_team_releases() - releases)
        """,
        env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "1"},
    )
    assert result.returncode == 0, result.stderr
    before, with_team, after, releases = map(int, result.stdout.split())
    assert with_team == before + 1, "the parallel copy started no helper thread"
    if released:
        # One release per 5 ms at most: a second comes only where the host held this thread up between the two
        # team kernels (seen beside busy processes), and finds no team.
        assert after == before and releases >= 1, "the main thread kept its idle OpenMP team"
    else:
        assert (after, releases) == (with_team, 0)


@pytest.mark.skipif(torch.get_num_threads() < 2, reason="parallel kernels need at least two intra-op threads")
def test_a_thread_that_starts_its_team_each_step_is_released_ever_less_often():
    result = run_python(
        """
        import time
        import torch
        from torch_axon import _C

        x = torch.randn(1 << 20, device="axon")
        batch = torch.randn(1 << 21)
        releases = _C._testing.program_thread_team_releases()
        start = time.perf_counter()
        for _ in range(100):
            torch.relu(batch)  # a batch prepared in parallel on the CPU: the team starts again
            torch.relu(x).sum().item()
            time.sleep(0.002)
        print(_C._testing.program_thread_team_releases() - releases, time.perf_counter() - start)
        """,
        env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "1"},
    )
    assert result.returncode == 0, result.stderr
    releases, seconds = result.stdout.split()
    # Waits of 5, 10, 20, ... ms between releases; at a fixed 5 ms, 40 or more in these 0.2 s and up.
    assert 1 <= int(releases) <= 10, (releases, seconds)
