"""The axon Philox generator: seeding, state, fork_rng, distributions."""

import numpy as np
import pytest
import torch

import torch_axon


def test_manual_seed_reproduces_every_random_op():
    def draw():
        return [
            torch.randn(1000, device="axon").cpu(),
            torch.rand(1000, device="axon").cpu(),
            torch.randint(0, 10, (1000,), device="axon").cpu(),
            torch.empty(1000, device="axon").bernoulli_(0.3).cpu(),
            torch.nn.functional.dropout(torch.ones(1000, device="axon"), 0.5).cpu(),
            torch.multinomial(torch.ones(10, device="axon"), 5).cpu(),
        ]

    torch.manual_seed(1234)
    first = draw()
    torch.manual_seed(1234)
    second = draw()
    for a, b in zip(first, second):
        assert torch.equal(a, b)
    torch.manual_seed(4321)
    assert not torch.equal(draw()[0], first[0])


def test_state_is_seed_and_offset():
    torch.axon.manual_seed(7)
    state = torch.axon.get_rng_state()
    assert state.dtype == torch.uint8 and state.numel() == 16
    seed, offset = state.view(torch.int64).tolist()
    assert (seed, offset) == (7, 0)
    torch.randn(10, device="axon")  # 10 elements: 5 Philox blocks
    assert torch.axon.get_rng_state().view(torch.int64).tolist() == [7, 5]
    assert torch.axon.initial_seed() == 7


def test_set_rng_state_replays():
    state = torch.axon.get_rng_state()
    a = torch.randn(100, device="axon").cpu()
    torch.axon.set_rng_state(state)
    b = torch.randn(100, device="axon").cpu()
    assert torch.equal(a, b)
    with pytest.raises(ValueError, match="16 bytes"):
        torch.axon.set_rng_state(torch.zeros(3, dtype=torch.uint8))


def test_fork_rng_restores_device_state():
    torch.manual_seed(0)
    before = torch.axon.get_rng_state()
    with torch.random.fork_rng(devices=[0], device_type="axon"):
        torch.randn(100, device="axon")
    assert torch.equal(torch.axon.get_rng_state(), before)


def test_devices_have_independent_generators():
    torch.axon.manual_seed_all(3)
    a = torch.randn(50, device="axon:0").cpu()
    b = torch.randn(50, device="axon:1").cpu()
    assert torch.equal(a, b)  # same seed, same offset
    assert torch.axon.get_rng_state(0).view(torch.int64)[1] == torch.axon.get_rng_state(1).view(torch.int64)[1]


def test_explicit_generator():
    generator = torch.Generator(device="axon").manual_seed(99)
    a = torch.randn(64, device="axon", generator=generator).cpu()
    generator.manual_seed(99)
    b = torch.randn(64, device="axon", generator=generator).cpu()
    assert torch.equal(a, b)
    with pytest.raises((RuntimeError, ValueError), match="generator"):
        torch.randn(4, device="axon", generator=torch.Generator())


def test_results_do_not_depend_on_layout():
    torch.manual_seed(5)
    contiguous = torch.empty(8, 16, device="axon").normal_().cpu()
    torch.manual_seed(5)
    transposed = torch.empty(16, 8, device="axon").t().normal_().cpu()
    assert torch.equal(contiguous, transposed)


def test_distributions_are_sane():
    torch.manual_seed(0)
    normal = torch.randn(200_000, dtype=torch.float64, device="axon").cpu()
    assert abs(normal.mean().item()) < 0.01 and abs(normal.std().item() - 1) < 0.01
    uniform = torch.empty(200_000, device="axon").uniform_(2, 5).cpu()
    assert uniform.min().item() >= 2 and uniform.max().item() < 5 and abs(uniform.mean().item() - 3.5) < 0.01
    coin = torch.empty(200_000, device="axon").bernoulli_(0.25).cpu()
    assert abs(coin.mean().item() - 0.25) < 0.01
    integers = torch.randint(3, 9, (200_000,), device="axon").cpu()
    assert integers.min().item() == 3 and integers.max().item() == 8
    half = torch.randn(1000, dtype=torch.bfloat16, device="axon")
    assert half.dtype == torch.bfloat16 and torch.isfinite(half.float()).all()


def _philox_lanes(seed: int, blocks: np.ndarray) -> tuple[np.ndarray, ...]:
    """The four lanes of Philox4x32-10 blocks (subsequence 0), written independently of the C++ kernels."""
    mask, shift = np.uint64(0xFFFFFFFF), np.uint64(32)
    c0, c1 = blocks & mask, blocks >> shift
    c2, c3 = np.zeros_like(blocks), np.zeros_like(blocks)
    k0, k1 = seed & 0xFFFFFFFF, seed >> 32
    for _ in range(10):
        p0, p1 = np.uint64(0xD2511F53) * c0, np.uint64(0xCD9E8D57) * c2
        c0, c2 = (p1 >> shift) ^ c1 ^ np.uint64(k0), (p0 >> shift) ^ c3 ^ np.uint64(k1)
        c1, c3 = p1 & mask, p0 & mask
        k0, k1 = (k0 + 0x9E3779B9) & 0xFFFFFFFF, (k1 + 0xBB67AE85) & 0xFFFFFFFF
    return c0, c1, c2, c3


@pytest.mark.parametrize("numel", [1, 31, 40_001, 40_002])
@pytest.mark.parametrize("seed", [0, 123_456_789_012_345])
def test_float_normal_is_box_muller_of_the_philox_stream(numel, seed):
    # Elements 2k and 2k + 1 come from lanes 0 and 1 of block k, through Box-Muller on float inputs; the float
    # kernel's own logarithm, sine and cosine stay within a few ulps of the exact transform. 40,002 elements split
    # across two threads inside a pair.
    torch.axon.manual_seed(seed)
    got = torch.randn(numel, device="axon").cpu().double().numpy()
    first, second, _, _ = _philox_lanes(seed, np.arange((numel + 1) // 2, dtype=np.uint64))
    scale = np.float32(2.0**-32)
    u1 = ((first.astype(np.float32) + np.float32(1)) * scale).astype(np.float64)
    u2 = (second.astype(np.float32) * scale).astype(np.float64)
    radius = np.sqrt(-2 * np.log(u1))
    expected = np.empty(2 * len(first))
    expected[0::2] = radius * np.cos(2 * np.pi * u2)
    expected[1::2] = radius * np.sin(2 * np.pi * u2)
    expected = expected[:numel]
    ulp = np.spacing(np.abs(expected).astype(np.float32)).astype(np.float64)
    assert (np.abs(got - expected) <= 8 * ulp + 1e-12).all()


def _uniform_doubles(seed: int, first_block: int, numel: int) -> np.ndarray:
    # Element i takes 64 bits from block i // 2: lanes 0 (high half) and 1 for even i, lanes 2 and 3 for odd i; its
    # top 53 bits make a double in [0, 1).
    lanes = _philox_lanes(seed, np.arange(first_block, first_block + (numel + 1) // 2, dtype=np.uint64))
    bits = np.empty(2 * len(lanes[0]), dtype=np.uint64)
    bits[0::2] = (lanes[0] << np.uint64(32)) | lanes[1]
    bits[1::2] = (lanes[2] << np.uint64(32)) | lanes[3]
    return (bits[:numel] >> np.uint64(11)).astype(np.float64) * 2.0**-53


@pytest.mark.parametrize("path", ["compiled", "avx2", "avx512"])
@pytest.mark.parametrize(
    ("seed", "first_block", "count"),
    [
        (0, 0, 1),
        (99, 3, 7),
        (99, 3, 8),
        (99, 3, 9),
        (5, 1_000, 17),
        (2**63 + 7, 2**32 - 5, 40),
        (2**64 - 1, 2**33 - 3, 33),
    ],
)
def test_each_philox_path_the_host_runs_makes_the_philox_blocks(path, seed, first_block, count):
    # philox_blocks takes the widest path the host runs, so a host with AVX-512 never reaches the AVX2 path in the
    # tests above; each path is checked here by itself: tails shorter than a vector, counters whose low word wraps
    # inside a vector, keys with both halves set.
    testing = torch_axon._C._testing
    path = getattr(testing.PhiloxPath, path)
    if not testing.host_runs_philox_path(path):
        pytest.skip(f"this host does not run the {path.name} path")
    got = testing.philox_blocks(path, seed, first_block, count)
    expected = _philox_lanes(seed, np.arange(first_block, first_block + count, dtype=np.uint64))
    for lane in range(4):
        assert got[lane] == expected[lane].tolist(), lane


@pytest.mark.parametrize("numel", [1, 31, 40_001, 40_002])
def test_uniform_is_the_philox_stream(numel):
    torch.axon.manual_seed(99)
    got = torch.rand(numel, dtype=torch.float64, device="axon").cpu().numpy()
    assert np.array_equal(got, _uniform_doubles(99, 0, numel))


@pytest.mark.parametrize(("seed", "first_block"), [(123_456_789_012_345, 2**32 - 5), (2**63 + 7, 2**33 - 21)])
def test_uniform_past_a_32_bit_block_counter_is_the_philox_stream(seed, first_block):
    # The blocks' counters cross a multiple of 2^32 inside one vector of blocks (philox_batches.cpp carries into the
    # counter's high word lane by lane), under a key with both halves set.
    signed_seed = seed - 2**64 if seed >= 2**63 else seed
    torch.axon.set_rng_state(torch.tensor([signed_seed, first_block], dtype=torch.int64).view(torch.uint8))
    got = torch.rand(101, dtype=torch.float64, device="axon").cpu().numpy()
    assert np.array_equal(got, _uniform_doubles(seed, first_block, 101))


@pytest.mark.parametrize(
    ("low", "high"), [(0, 2), (-7, 100), (0, 2**31 - 1), (5, 2**32 + 20), (-(2**62), 2**62 + 7), (-(2**63), 2**63 - 1)]
)
def test_randint_is_the_philox_bits_modulo_the_range(low, high):
    # Element i is low + (its 64 bits, as in test_uniform_is_the_philox_stream) % (high - low), exactly: the kernel
    # computes the remainder without a division, which must agree for every range up to 2^64 - 1.
    numel = 4097
    torch.axon.manual_seed(5)
    got = torch.randint(low, high, (numel,), device="axon").cpu().tolist()
    lanes = _philox_lanes(5, np.arange((numel + 1) // 2, dtype=np.uint64))
    bits = np.empty(2 * len(lanes[0]), dtype=np.uint64)
    bits[0::2] = (lanes[0] << np.uint64(32)) | lanes[1]
    bits[1::2] = (lanes[2] << np.uint64(32)) | lanes[3]
    expected = [(low + int(b) % (high - low) + 2**63) % 2**64 - 2**63 for b in bits[:numel]]
    assert got == expected


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_narrow_normal_is_the_float_normal_rounded(dtype):
    torch.manual_seed(11)
    wide = torch.empty(40_002, device="axon").normal_(0.5, 2.0)
    torch.manual_seed(11)
    narrow = torch.empty(40_002, device="axon", dtype=dtype).normal_(0.5, 2.0)
    assert torch.equal(narrow.cpu(), wide.to(dtype).cpu())


def test_invalid_arguments_raise():
    x = torch.empty(10, device="axon")
    with pytest.raises(RuntimeError, match="from=5.* > to=1"):
        x.uniform_(5, 1)
    with pytest.raises(RuntimeError, match="std >= 0"):
        x.normal_(0, -1)
    with pytest.raises(RuntimeError, match="p to be in"):
        x.bernoulli_(1.5)


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpointed_dropout_recomputes_the_same_mask(use_reentrant):
    # torch.utils.checkpoint restores the device RNG state before recomputing
    # only when the device module reports itself initialized.
    from torch.utils.checkpoint import checkpoint

    x = torch.ones(1000, device="axon", requires_grad=True)
    y = checkpoint(lambda t: torch.nn.functional.dropout(t * 1.0, 0.5), x, use_reentrant=use_reentrant)
    y.sum().backward()
    assert torch.equal(x.grad, (y != 0).float() * 2)


def test_default_generators_are_the_seeded_generators():
    torch.manual_seed(123)
    assert len(torch.axon.default_generators) == torch.axon.device_count()
    assert torch.axon.default_generators[1].initial_seed() == 123
    assert torch.axon.default_generators[-1].device == torch.device("axon", torch.axon.device_count() - 1)
    state = torch.axon.default_generators[0].get_state()
    first = torch.rand(4, device="axon")
    torch.axon.default_generators[0].set_state(state)
    assert torch.equal(torch.rand(4, device="axon"), first)


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64])
def test_random_on_unsigned_dtypes(dtype):
    drawn = torch.empty(2000, dtype=dtype, device="axon").random_().cpu().double()
    assert drawn.min() >= 0 and drawn.unique().numel() > 1000
    bounded = torch.randint(3, 9, (500,), dtype=dtype, device="axon").cpu().double()
    assert bounded.min() >= 3 and bounded.max() <= 8


def test_random_bounds_are_checked_as_on_the_cpu():
    for device in ("cpu", "axon"):
        with pytest.raises(RuntimeError, match="from is out of bounds for short int"):
            torch.empty(3, dtype=torch.int16, device=device).random_(-40000, 5)
        with pytest.raises(RuntimeError, match="to - 1 is out of bounds for unsigned char"):
            torch.empty(3, dtype=torch.uint8, device=device).random_(0, 1000)


def test_complex_uniform_and_rand():
    values = torch.empty(4000, dtype=torch.complex64, device="axon").uniform_(2, 3).cpu()
    assert 2 <= values.real.min() and values.real.max() < 3 and 2 <= values.imag.min() and values.imag.max() < 3
    assert torch.rand(3, dtype=torch.complex128, device="axon").dtype == torch.complex128


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("p", [0.0, 0.3, 0.9, 1.0])
def test_in_place_dropout_draws_the_same_mask_as_dropout(dtype, p):
    # In-place dropout goes through ATen's unfused path (bernoulli_(1 - p), x * (mask / (1 - p))), dropout through
    # axon's native_dropout: after the same seed they give the same values, as upstream's
    # test_variant_consistency_eager expects.
    x = torch.randn(4096, device="axon", dtype=dtype)
    torch.manual_seed(3)
    functional = torch.nn.functional.dropout(x, p)
    torch.manual_seed(3)
    in_place = torch.nn.functional.dropout(x.clone(), p, inplace=True)
    assert torch.equal(functional, in_place)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("p", [0.0, 0.2, 1 / 3])
def test_one_pass_dropout_gives_the_unfused_forms_bits(dtype, p):
    # Float and double dropout makes mask and output in one pass (random.cpp): the unfused form's values bit for
    # bit, NaN, infinities, negative zeros and a transposed input included, and an odd element count.
    x = torch.randn(129, 37, dtype=dtype)
    x[:2, :4] = torch.tensor([[float("nan"), float("inf"), -float("inf"), -0.0], [-1.0, 0.0, 1e-300, -5.0]])
    source = x.to("axon").t()
    torch.manual_seed(9)
    output, mask = torch.native_dropout(source, p, True)
    torch.manual_seed(9)
    unfused = torch.nn.functional.dropout(source.clone(), p, inplace=True)
    bits = torch.int32 if dtype == torch.float32 else torch.int64
    assert torch.equal(output.cpu().view(bits), unfused.cpu().contiguous().view(bits))
    torch.manual_seed(9)
    assert torch.equal(mask.cpu(), torch.empty_like(source).bernoulli_(1 - p).cpu().bool())


def test_bernoulli_dtype_is_checked_at_the_call():
    with pytest.raises(NotImplementedError, match="not implemented for 'ComplexFloat'"):
        torch.ones(3, dtype=torch.cfloat, device="axon").bernoulli_(0.5)
    with pytest.raises(NotImplementedError, match="not implemented for 'ComplexFloat'"):
        torch.nn.functional.dropout2d(torch.ones(2, 2, 3, dtype=torch.cfloat, device="axon"), 0.5)
    torch.axon.synchronize()


@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "sliced channels_last", "transposed", "sliced"])
def test_dropout_lays_out_its_results_as_the_cpu(layout):
    # PyTorch's test_Dropout: a sliced channels-last input gives channels-last results on the CPU; axon's were
    # contiguous.
    base = torch.randn(2, 3, 4, 10)
    make = {"contiguous": lambda d: base.to(d),
            "channels_last": lambda d: base.to(d).contiguous(memory_format=torch.channels_last),
            "sliced channels_last": lambda d: base.to(d).contiguous(memory_format=torch.channels_last)[..., ::2],
            "transposed": lambda d: base.to(d).transpose(1, 3),
            "sliced": lambda d: base.to(d)[:, 1]}[layout]
    x, on_axon = make("cpu"), make("axon")
    assert on_axon.stride() == x.stride()
    for p in (1e-10, 0.5):
        output, mask = torch.ops.aten.native_dropout(on_axon, p, True)
        expected_output, expected_mask = torch.ops.aten.native_dropout(x, p, True)
        assert (output.stride(), mask.stride()) == (expected_output.stride(), expected_mask.stride())
        torch.testing.assert_close(output.cpu(), x * mask.cpu() / (1 - p))
        torch.manual_seed(3)
        functional = torch.nn.functional.dropout(on_axon, p)
        torch.manual_seed(3)
        in_place = torch.nn.functional.dropout(on_axon.clone(), p, inplace=True)
        assert torch.equal(functional.cpu(), in_place.cpu())


@pytest.mark.parametrize("draw", ["normal_", "uniform_"])
@pytest.mark.parametrize("dtype", [torch.int32, torch.bool, torch.float32])
@pytest.mark.parametrize("numel", [0, 3])
def test_draws_into_other_dtypes_raise_or_not_as_on_the_cpu(draw, dtype, numel):
    # An empty integer tensor's normal_ draws nothing on the CPU (torch.randn(0, dtype=torch.int32) works: PyTorch's
    # test_add_scalar_with_empty_list_and_empty_tensor); others raise NotImplementedError with the CPU's message.
    outcomes = []
    for device in ("cpu", "axon"):
        try:
            getattr(torch.empty(numel, dtype=dtype, device=device), draw)()
            outcomes.append("drawn")
        except NotImplementedError as error:
            outcomes.append(str(error).splitlines()[0])
    assert outcomes[1] == outcomes[0]
