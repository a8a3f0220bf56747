"""Every collective on axon tensors against Gloo on the same CPU tensors.

torchrun --nproc-per-node 2 tests/distributed/collectives.py
One "cpu:gloo,axon:axon" group: each check runs the collective on CPU tensors
(Gloo) and on axon copies of them (ProcessGroupAxon) and compares.
"""

from __future__ import annotations

import datetime
import time

import torch
import torch.distributed as dist
from common import close, device, rank, run_checks

import torch_axon

WORLD = 2


def data(shape, dtype=torch.float32, salt=0):
    generator = torch.Generator().manual_seed(1000 * rank() + salt)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=generator).bool()
    if not dtype.is_floating_point:
        return torch.randint(1, 8, shape, generator=generator).to(dtype)
    return torch.randn(shape, generator=generator).to(dtype)


def on_axon(tensors):
    return [t.to(device()) for t in tensors]


def compare(fn, *cpu_tensors, what):
    """fn(*tensors) mutates its tensors; runs it on CPU and on axon copies, compares all."""
    axon_tensors = on_axon(cpu_tensors)
    fn(*cpu_tensors)
    fn(*axon_tensors)
    for index, (a, c) in enumerate(zip(axon_tensors, cpu_tensors)):
        close(a, c, f"{what} tensor {index}", atol=1e-2 if c.dtype in (torch.bfloat16, torch.float16) else 1e-5)


def check_backend_selected():
    assert dist.get_backend() == "cpu:gloo,axon:axon", dist.get_backend()
    backend = dist.group.WORLD._get_backend(device())
    assert type(backend).__name__ == "ProcessGroupAxon", type(backend)


def check_broadcast():
    for src in range(WORLD):
        compare(lambda t, src=src: dist.broadcast(t, src=src), data((5, 3)), what=f"broadcast src={src}")


def check_all_reduce_ops_and_dtypes():
    ops = [dist.ReduceOp.SUM, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN, dist.ReduceOp.MAX]
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.uint8):
        for op in ops:
            compare(lambda t, op=op: dist.all_reduce(t, op=op), data((7,), dtype), what=f"all_reduce {op} {dtype}")
    for op in (dist.ReduceOp.BAND, dist.ReduceOp.BOR, dist.ReduceOp.BXOR):
        compare(lambda t, op=op: dist.all_reduce(t, op=op), data((9,), torch.int64), what=f"all_reduce {op}")


def check_all_reduce_avg_and_premul_sum():
    x = data((6,))
    expected = x.clone()
    dist.all_reduce(expected)  # Gloo has no AVG/PREMUL_SUM: build them from SUM
    t = x.to(device())
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    close(t, expected / WORLD, "all_reduce AVG")
    t = x.to(device())
    dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.25))
    close(t, expected * 0.25, "all_reduce PREMUL_SUM(0.25)")
    t = x.to(device())
    dist.all_reduce(t, op=dist._make_nccl_premul_sum(torch.tensor([3.0], device=device())))
    close(t, expected * 3.0, "all_reduce PREMUL_SUM(tensor 3.0)")
    try:
        dist.all_reduce(torch.ones(2, dtype=torch.int64, device=device()), op=dist.ReduceOp.AVG)
    except ValueError as error:
        assert "AVG" in str(error), error
    else:
        raise AssertionError("AVG on integers did not raise")


def check_all_reduce_non_contiguous_and_async():
    # Gloo itself mishandles non-contiguous CPU tensors: the reference
    # reduces a contiguous copy.
    x = data((4, 6))
    expected = x.clone()
    summed = x[:, 1::2].contiguous()
    dist.all_reduce(summed)
    expected[:, 1::2] = summed
    t = x.to(device())
    dist.all_reduce(t[:, 1::2])
    close(t, expected, "all_reduce strided view (other columns untouched)")
    t = x.to(device()).t()
    dist.all_reduce(t)
    summed = x.clone()
    dist.all_reduce(summed)
    close(t, summed.t(), "all_reduce transposed")
    x = data((1000,))
    a = x.to(device())
    work = dist.all_reduce(a, async_op=True)
    work.wait()
    dist.all_reduce(x)
    close(a, x, "all_reduce async_op")


def check_stream_ordering():
    """The collective waits for the caller's stream; wait() orders it after the result."""

    dev = device()
    stream = torch.axon.Stream(device=dev)
    base = torch.full((256,), float(rank() + 1), device=dev)
    gated = not torch_axon.is_launch_blocking()  # a gate would deadlock a blocking launch
    with torch.axon.stream(stream):
        gate = torch_axon._C._testing.close_gate(stream.device_index, stream.stream_id) if gated else None
        produced = base * 2  # queued behind the closed gate
        work = dist.all_reduce(produced, async_op=True)  # must return although its input is not ready
        if gated:
            assert not work.is_completed()
            torch_axon._C._testing.open_gate(gate)
        work.wait()
        consumed = produced + 1  # ordered after the collective on `stream`
    stream.synchronize()
    close(consumed, torch.full((256,), 2.0 * (1 + 2) + 1), "stream-ordered all_reduce")
    fut = dist.all_reduce(torch.ones(3, device=dev), async_op=True).get_future()
    doubled = fut.then(lambda f: f.value()[0] * 2).wait()
    close(doubled, torch.full((3,), 4.0), "future.then")


def check_memory_is_released():
    """Tensors dropped while their collective is pending stay valid until it completes, then return."""
    dev = device()
    torch.axon.synchronize(dev)
    baseline = torch.axon.memory_allocated(dev)
    works = []
    for i in range(50):
        t = torch.full((1000,), float(i), device=dev)
        works.append(dist.all_reduce(t[::2], async_op=True))  # strided: staging buffers too
        del t
    for work in works:
        work.wait()
    results = [w.result()[0] for w in works]
    close(results[7], torch.full((500,), 14.0), "result of a collective whose input was dropped")
    del works, results, work
    # The group's completion thread drops its last reference to a Work just
    # after completing it (as NCCL's watchdog does): allow it a moment.
    deadline = time.monotonic() + 2.0
    while torch.axon.memory_allocated(dev) > baseline and time.monotonic() < deadline:
        time.sleep(0.01)
    # (<=: the baseline may still include an earlier check's tensors.)
    assert torch.axon.memory_allocated(dev) <= baseline, (torch.axon.memory_allocated(dev), baseline)


def check_reduce():
    for dst in range(WORLD):
        compare(lambda t, dst=dst: dist.reduce(t, dst=dst), data((4,)), what=f"reduce dst={dst}")
    x = data((4,))
    expected = x.clone()
    dist.reduce(expected, dst=0)
    t = x.to(device())
    dist.reduce(t, dst=0, op=dist.ReduceOp.AVG)
    if rank() == 0:
        close(t, expected / WORLD, "reduce AVG")


def check_all_gather_family():
    x = data((3, 2))
    cpu_out = [torch.empty(3, 2) for _ in range(WORLD)]
    axon_out = [torch.empty(3, 2, device=device()) for _ in range(WORLD)]
    dist.all_gather(cpu_out, x)
    dist.all_gather(axon_out, x.to(device()))
    for a, c in zip(axon_out, cpu_out):
        close(a, c, "all_gather")
    cpu_flat = torch.empty(WORLD * 3, 2)
    axon_flat = torch.empty(WORLD * 3, 2, device=device())
    dist.all_gather_into_tensor(cpu_flat, x)
    dist.all_gather_into_tensor(axon_flat, x.to(device()))
    close(axon_flat, cpu_flat, "all_gather_into_tensor")
    # Non-contiguous output view (every other row of a bigger buffer).
    axon_big = torch.zeros(WORLD * 3, 4, device=device())
    dist.all_gather_into_tensor(axon_big[:, :2], x.to(device()))
    close(axon_big[:, :2], cpu_flat, "all_gather_into_tensor strided output")
    objects = [None] * WORLD
    dist.all_gather_object(objects, {"rank": rank()})
    assert objects == [{"rank": r} for r in range(WORLD)], objects


def check_gather_scatter():
    for root in range(WORLD):
        x = data((4,), salt=root)
        cpu_out = [torch.empty(4) for _ in range(WORLD)] if rank() == root else None
        axon_out = [torch.empty(4, device=device()) for _ in range(WORLD)] if rank() == root else None
        dist.gather(x, cpu_out, dst=root)
        dist.gather(x.to(device()), axon_out, dst=root)
        if rank() == root:
            for a, c in zip(axon_out, cpu_out):
                close(a, c, f"gather dst={root}")
        chunks = [data((2, 2), salt=10 + i) for i in range(WORLD)] if rank() == root else None
        cpu_recv = torch.empty(2, 2)
        axon_recv = torch.empty(2, 2, device=device())
        dist.scatter(cpu_recv, chunks, src=root)
        dist.scatter(axon_recv, on_axon(chunks) if chunks else None, src=root)
        close(axon_recv, cpu_recv, f"scatter src={root}")


def check_reduce_scatter_family():
    inputs = [data((3,), salt=i) for i in range(WORLD)]
    cpu_out, axon_out = torch.empty(3), torch.empty(3, device=device())
    dist.reduce_scatter(cpu_out, inputs)
    dist.reduce_scatter(axon_out, on_axon(inputs))
    close(axon_out, cpu_out, "reduce_scatter")
    flat = data((WORLD * 4, 2))
    cpu_out, axon_out = torch.empty(4, 2), torch.empty(4, 2, device=device())
    dist.reduce_scatter_tensor(cpu_out, flat)
    dist.reduce_scatter_tensor(axon_out, flat.to(device()))
    close(axon_out, cpu_out, "reduce_scatter_tensor")
    dist.reduce_scatter_tensor(axon_out, flat.to(device()), op=dist.ReduceOp.AVG)
    close(axon_out, cpu_out / WORLD, "reduce_scatter_tensor AVG")
    dist.reduce_scatter_tensor(axon_out, flat.to(device()), op=dist._make_nccl_premul_sum(0.5))
    close(axon_out, cpu_out * 0.5, "reduce_scatter_tensor PREMUL_SUM")
    bf16 = flat.to(torch.bfloat16)
    cpu_out = torch.empty(4, 2, dtype=torch.bfloat16)
    axon_out = torch.empty(4, 2, dtype=torch.bfloat16, device=device())
    dist.reduce_scatter_tensor(cpu_out, bf16)
    dist.reduce_scatter_tensor(axon_out, bf16.to(device()))
    close(axon_out, cpu_out, "reduce_scatter_tensor bfloat16")


def check_all_to_all():
    # Uneven: rank r sends (r + 1 + j) rows to rank j.
    send_splits = [rank() + 1 + j for j in range(WORLD)]
    recv_splits = [j + 1 + rank() for j in range(WORLD)]
    x = data((sum(send_splits), 3))
    cpu_out = torch.empty(sum(recv_splits), 3)
    axon_out = torch.empty(sum(recv_splits), 3, device=device())
    dist.all_to_all_single(cpu_out, x, recv_splits, send_splits)
    dist.all_to_all_single(axon_out, x.to(device()), recv_splits, send_splits)
    close(axon_out, cpu_out, "all_to_all_single uneven")
    even = data((WORLD * 2, 3))
    cpu_out, axon_out = torch.empty_like(even), torch.empty(even.shape, device=device())
    dist.all_to_all_single(cpu_out, even)
    dist.all_to_all_single(axon_out, even.to(device()))
    close(axon_out, cpu_out, "all_to_all_single even")
    inputs = [data((rank() + 1 + j,), salt=j) for j in range(WORLD)]
    axon_outs = [torch.empty(j + 1 + rank(), device=device()) for j in range(WORLD)]
    dist.all_to_all(axon_outs, on_axon(inputs))
    # Gloo's all_to_all needs equal sizes; the reference is the flat version.
    flat_out = torch.empty(sum(j + 1 + rank() for j in range(WORLD)))
    dist.all_to_all_single(flat_out, torch.cat(inputs), [j + 1 + rank() for j in range(WORLD)],
                           [rank() + 1 + j for j in range(WORLD)])
    close(torch.cat([o.cpu() for o in axon_outs]), flat_out, "all_to_all uneven lists")


def check_point_to_point():
    peer = 1 - rank()
    x = data((5,))
    if rank() == 0:
        dist.send(x.to(device()), dst=peer)
        got = torch.empty(5, device=device())
        dist.recv(got, src=peer)
    else:
        got = torch.empty(5, device=device())
        dist.recv(got, src=peer)
        dist.send(x.to(device()), dst=peer)
    expected = torch.empty(5)
    if rank() == 0:
        dist.send(x, dst=peer)
        dist.recv(expected, src=peer)
    else:
        dist.recv(expected, src=peer)
        dist.send(x, dst=peer)
    close(got, expected, "send/recv")
    # Receive from any source reports the sender.
    if rank() == 1:
        dist.send(torch.full((2,), 7.0, device=device()), dst=0, tag=3)
    else:
        anywhere = torch.empty(2, device=device())
        sender = dist.recv(anywhere, tag=3)
        assert sender == 1, sender
        close(anywhere, torch.full((2,), 7.0), "recv from any source")
    # Batched P2P: both ranks post send and recv together (would deadlock if
    # either waited for its send before posting the receive).
    outgoing = [data((3,), salt=s).to(device()) for s in range(2)]
    incoming = [torch.empty(3, device=device()) for _ in range(2)]
    ops = [dist.P2POp(dist.isend, outgoing[0], peer), dist.P2POp(dist.isend, outgoing[1], peer),
           dist.P2POp(dist.irecv, incoming[0], peer), dist.P2POp(dist.irecv, incoming[1], peer)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    for s in range(2):
        generator = torch.Generator().manual_seed(1000 * peer + s)
        close(incoming[s], torch.randn((3,), generator=generator), f"batch_isend_irecv {s}")


def check_coalesced():
    tensors = [data((3,), salt=i) for i in range(3)]
    cpu = [t.clone() for t in tensors]
    axon = on_axon(tensors)
    for t in cpu:
        dist.all_reduce(t)
    with dist._coalescing_manager(device=device()):
        for t in axon:
            dist.all_reduce(t)
    for a, c in zip(axon, cpu):
        close(a, c, "coalesced all_reduce")
    axon = on_axon(tensors)
    dist.all_reduce_coalesced(axon)
    for a, c in zip(axon, cpu):
        close(a, c, "all_reduce_coalesced")
    inputs = [data((2, 2), salt=i) for i in range(2)]
    outputs = [torch.empty(WORLD * 2, 2, device=device()) for _ in range(2)]
    with dist._coalescing_manager(device=device(), async_ops=True) as manager:
        for out, x in zip(outputs, inputs):
            dist.all_gather_into_tensor(out, x.to(device()))
    manager.wait()
    for out, x in zip(outputs, inputs):
        expected = torch.empty(WORLD * 2, 2)
        dist.all_gather_into_tensor(expected, x)
        close(out, expected, "coalesced all_gather_into_tensor")
    inputs = [data((WORLD * 2,), salt=i) for i in range(2)]
    outputs = [torch.empty(2, device=device()) for _ in range(2)]
    with dist._coalescing_manager(device=device()):
        for out, x in zip(outputs, inputs):
            dist.reduce_scatter_tensor(out, x.to(device()))
    for out, x in zip(outputs, inputs):
        expected = torch.empty(2)
        dist.reduce_scatter_tensor(expected, x)
        close(out, expected, "coalesced reduce_scatter_tensor")


def check_subgroups():
    pair = dist.new_group([0, 1], backend="axon")
    t = torch.full((2,), float(rank()), device=device())
    dist.all_reduce(t, group=pair)
    close(t, torch.full((2,), 1.0), "new_group all_reduce")
    dist.barrier(group=pair)
    singles = dist.split_group(split_ranks=[[0], [1]])  # the default "cpu:gloo,axon:axon" group
    cpu = torch.ones(2)
    dist.all_reduce(cpu, group=singles)  # its Gloo half was split too
    close(cpu, torch.ones(2), "split_group singleton all_reduce (cpu)")
    parent = dist.new_group([0, 1], backend="axon", device_id=device())
    assert singles is not None and dist.get_world_size(singles) == 1
    t = torch.full((2,), float(rank() + 5), device=device())
    dist.all_reduce(t, group=singles)
    close(t, torch.full((2,), float(rank() + 5)), "split_group singleton all_reduce")
    dist.barrier(group=singles)
    whole = dist.split_group(parent, split_ranks=[[0, 1]])
    t = torch.full((2,), float(rank() + 1), device=device())
    dist.all_reduce(t, group=whole)
    close(t, torch.full((2,), 3.0), "split_group all_reduce")
    subs, _ = dist.new_subgroups(group_size=1)
    dist.barrier(group=subs)
    dist.barrier()


def check_bad_arguments():
    axon_only = dist.new_group([0, 1], backend="axon")
    try:
        dist.all_reduce(torch.ones(2), group=axon_only)
    except (RuntimeError, TypeError, ValueError) as error:
        assert "cpu" in str(error).lower(), error
    else:
        raise AssertionError("a CPU tensor on an axon-only group did not raise")
    backend = dist.group.WORLD._get_backend(device())
    other = torch.device("axon", (device().index + 1) % torch.axon.device_count())
    try:
        dist.all_gather([torch.empty(2, device=device()), torch.empty(2, device=other)],
                        torch.ones(2, device=device()))
    except ValueError as error:
        assert "expected every tensor on" in str(error), error
    else:
        raise AssertionError("tensors on two devices did not raise")
    try:
        dist.all_gather_into_tensor(torch.empty(3, device=device()), torch.ones(2, device=device()))
    except ValueError as error:
        assert "expected an output of 4 elements" in str(error), error
    else:
        raise AssertionError("a wrong all_gather_into_tensor output size did not raise")
    assert backend is not None


def main():
    torch.axon.set_device(device())
    dist.init_process_group("cpu:gloo,axon:axon", timeout=datetime.timedelta(seconds=60), device_id=device())
    run_checks([
        check_backend_selected, check_broadcast, check_all_reduce_ops_and_dtypes,
        check_all_reduce_avg_and_premul_sum, check_all_reduce_non_contiguous_and_async, check_stream_ordering,
        check_memory_is_released,
        check_reduce, check_all_gather_family, check_gather_scatter, check_reduce_scatter_family,
        check_all_to_all, check_point_to_point, check_coalesced, check_subgroups, check_bad_arguments,
    ])


if __name__ == "__main__":
    main()
