// Random kernels drawing from the axon Philox generator.
//
// Element i of a tensor (in row-major logical order) uses 64 bits: lanes
// 2*(i%2), 2*(i%2)+1 of Philox block (first + i/2). normal_ instead makes
// elements 2k and 2k+1 together, from lanes 0 and 1 of block (first + k).
// The result is therefore independent of threading, and a tensor of n
// elements advances the generator's offset by ceil(n/2) blocks.
#include "host_execution/random.h"
#include <ATen/MemoryOverlap.h>

#include <ATen/Dispatch.h>
#include <ATen/Dispatch_v2.h>
#include <ATen/Parallel.h>
#include <ATen/native/DistributionTemplates.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/view_as_real.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/generator.h"
#include "core/stream.h"
#include "host_execution/device_memory_views.h"
#include "host_execution/per_instruction_set.h"
#include "host_execution/philox_batches.h"
#include "host_execution/stream_launch.h"

namespace axon {
namespace {

constexpr double kTwoPi = 6.283185307179586476925286766559;

uint64_t blocks_for(int64_t numel) { return static_cast<uint64_t>((numel + 1) / 2); }

// Blocks each step of the loops below draws at once (philox_batches.h).
constexpr int64_t kBlocksPerStep = 64;

// Splits [0, numel) among the worker's threads and calls step(i, blocks, end)
// for each run of at most kBlocksPerStep blocks of a thread's share: i is
// even, and elements i .. min(i + 2 * blocks, end) - 1 come from blocks
// first_block + i/2 onwards. A share that starts inside a pair makes the
// whole pair (the same values as its neighbour), so results do not depend on
// the split.
template <typename Step>
void for_each_block_step(int64_t numel, const Step& step) {
  constexpr int64_t kGrain = 1 << 14;
  at::parallel_for(0, numel, kGrain, [&](int64_t begin, int64_t end) {
    begin -= begin % 2;
    for (int64_t i = begin; i < end; i += 2 * kBlocksPerStep) step(i, std::min(kBlocksPerStep, (end - i + 1) / 2), end);
  });
}

// Calls draw(index, bits) for every element with its 64 random bits.
template <typename Draw>
void for_each_draw(uint64_t seed, uint64_t first_block, int64_t numel, const Draw& draw) {
  for_each_block_step(numel, [&](int64_t i, int64_t blocks, int64_t end) {
    uint32_t lanes[4][kBlocksPerStep];
    uint32_t* const lane_pointers[4] = {lanes[0], lanes[1], lanes[2], lanes[3]};
    philox_blocks(seed, first_block + static_cast<uint64_t>(i) / 2, blocks, lane_pointers);
    // Even elements take lanes 0 (high half) and 1, odd ones lanes 2 and 3.
    for (int64_t block = 0; block < blocks; ++block) {
      const int64_t element = i + 2 * block;
      draw(element, (static_cast<uint64_t>(lanes[0][block]) << 32) | lanes[1][block]);
      if (element + 1 < end) draw(element + 1, (static_cast<uint64_t>(lanes[2][block]) << 32) | lanes[3][block]);
    }
  });
}

// Calls draw_pair(i, first_bits, second_bits) for every even element index i
// with lanes 0 and 1 of block (first_block + i/2); the pair makes elements i
// and i + 1 (the second only when i + 1 < numel).
template <typename DrawPair>
void for_each_pair_draw(uint64_t seed, uint64_t first_block, int64_t numel, const DrawPair& draw_pair) {
  for_each_block_step(numel, [&](int64_t i, int64_t blocks, int64_t) {
    uint32_t lanes[4][kBlocksPerStep];  // lanes 2 and 3 stay unused
    uint32_t* const lane_pointers[4] = {lanes[0], lanes[1], lanes[2], lanes[3]};
    philox_blocks(seed, first_block + static_cast<uint64_t>(i) / 2, blocks, lane_pointers);
    for (int64_t block = 0; block < blocks; ++block) draw_pair(i + 2 * block, lanes[0][block], lanes[1][block]);
  });
}

// Writes the pair of standard normal values that Box-Muller makes in double
// from two 32-bit draws, scaled, into data[i] and (when inside the tensor)
// data[i + 1]. Narrower dtypes take fill_normal_in_float instead.
void write_normal_pair(double* data, int64_t i, int64_t numel, uint32_t first, uint32_t second, double mean,
                       double std) {
  constexpr double kScale = 1.0 / 4294967296.0;
  // u1 in (0, 1] keeps the logarithm finite.
  const double u1 = (static_cast<double>(first) + 1.0) * kScale;
  const double u2 = static_cast<double>(second) * kScale;
  const double radius = std::sqrt(-2.0 * std::log(u1));
  const double angle = kTwoPi * u2;
  data[i] = mean + std * radius * std::cos(angle);
  if (i + 1 < numel) data[i + 1] = mean + std * radius * std::sin(angle);
}

// normal_ for float and narrower dtypes: the same pairs (elements 2k and
// 2k + 1 from block first_block + k), computed in float a batch of blocks at
// a time (philox_batches.h).
template <typename scalar_t>
void fill_normal_in_float(scalar_t* data, int64_t numel, uint64_t seed, uint64_t first_block, double mean, double std) {
  const auto m = static_cast<float>(mean);
  const auto s = static_cast<float>(std);
  for_each_block_step(numel, [&](int64_t i, int64_t pairs, int64_t) {
    float cos_part[kBlocksPerStep];
    float sin_part[kBlocksPerStep];
    standard_normal_pairs(seed, first_block + static_cast<uint64_t>(i) / 2, pairs, cos_part, sin_part);
    for (int64_t k = 0; k < pairs; ++k) {
      data[i + 2 * k] = static_cast<scalar_t>(m + s * cos_part[k]);
      if (i + 2 * k + 1 < numel) data[i + 2 * k + 1] = static_cast<scalar_t>(m + s * sin_part[k]);
    }
  });
}

double unit_interval(uint64_t bits) {  // [0, 1)
  return static_cast<double>(bits >> 11) * (1.0 / 9007199254740992.0);
}

// Runs `fill(contiguous_output)` on the stream, writing into `self`.
template <typename Fill>
void launch_fill(const at::Tensor& self, const char* name, Fill fill) {
  if (self.numel() == 0) {
    return;
  }
  HostAliases aliases;
  const at::Tensor alias = aliases.alias(self, Access::overwrite);
  launch_on_stream(current_stream_handle(self.device().index()), name, aliases, [alias, fill]() {
    if (alias.is_contiguous()) {
      fill(alias);
    } else {
      at::Tensor staging = at::empty(alias.sizes(), alias.options());
      fill(staging);
      alias.copy_(staging);
    }
  });
}

// Checks that the fill may write `self` (the CPU's TensorIterator makes the
// same check at the call, before drawing), then reserves its draws.
std::pair<uint64_t, uint64_t> reserve(const at::Tensor& self, const std::optional<at::Generator>& generator) {
  at::assert_no_internal_overlap(self);
  return resolve_generator(generator, self.device().index())->reserve_blocks(blocks_for(self.numel()));
}

}  // namespace

at::Tensor& uniform_(at::Tensor& self, double from, double to, std::optional<at::Generator> generator) {
  if (self.is_complex()) {
    // As on CPU: real and imaginary parts each uniform in [from, to).
    at::Tensor parts = at::view_as_real(self);
    return uniform_(parts, from, to, generator), self;
  }
  // The CPU's checks, in its order and words (other dtypes: NotImplementedError
  // "check_uniform_bounds" not implemented), and its clamping of the bounds
  // into the dtype's range.
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "check_uniform_bounds", [&] {
    const auto dtype = self.dtype();
    const auto lowest = static_cast<double>(std::numeric_limits<scalar_t>::lowest());
    const auto max = static_cast<double>(std::numeric_limits<scalar_t>::max());
    TORCH_CHECK(from >= lowest && from <= max, "from is out of bounds for ", dtype);
    TORCH_CHECK(to >= lowest && to <= max, "to is out of bounds for ", dtype);
    TORCH_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from=", from, " > to=", to);
    TORCH_CHECK((to - from) <= max, "uniform_ expects to-from <= std::numeric_limits<",
                c10::toString(self.scalar_type()), ">::max(), but found to=", to, " and from=", from,
                " which result in to-from to exceed the limit");
    from = std::min(std::max(from, lowest), max);
    to = std::max(std::min(to, max), lowest);
  });
  const auto [seed, first] = reserve(self, generator);
  launch_fill(self, "aten::uniform_", [seed = seed, first = first, from, to](const at::Tensor& out) {
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, out.scalar_type(), "axon_uniform_", [&] {
      scalar_t* data = out.data_ptr<scalar_t>();
      const auto upper = static_cast<scalar_t>(to);
      for_each_draw(seed, first, out.numel(), [&](int64_t i, uint64_t bits) {
        auto value = static_cast<scalar_t>(from + unit_interval(bits) * (to - from));
        // Rounding to a narrow dtype may land on `to`; keep the range half-open.
        data[i] = (value == upper && from < to) ? static_cast<scalar_t>(from) : value;
      });
    });
  });
  return self;
}

at::Tensor& normal_(at::Tensor& self, double mean, double std, std::optional<at::Generator> generator) {
  TORCH_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  if (self.is_complex()) {
    // As on CPU: real and imaginary parts each get variance std^2 / 2.
    at::Tensor parts = at::view_as_real(self);
    normal_(parts, mean, std / std::sqrt(2.0), generator);
    return self;
  }
  // As on the CPU: an empty tensor of any dtype draws nothing; the CPU
  // kernel's dispatch refuses other dtypes, with its message.
  if (self.numel() == 0) return self;
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), "\"normal_kernel_cpu\" not implemented for '",
                              self.scalar_type(), "'");
  const auto [seed, first] = reserve(self, generator);
  launch_fill(self, "aten::normal_", [seed = seed, first = first, mean, std](const at::Tensor& out) {
    const int64_t numel = out.numel();
    if (out.scalar_type() == at::kDouble) {
      double* data = out.data_ptr<double>();
      for_each_pair_draw(seed, first, numel, [&](int64_t i, uint32_t first_bits, uint32_t second_bits) {
        write_normal_pair(data, i, numel, first_bits, second_bits, mean, std);
      });
      return;
    }
    AT_DISPATCH_V2(out.scalar_type(), "axon_normal_",
                   AT_WRAP([&] { fill_normal_in_float(out.data_ptr<scalar_t>(), numel, seed, first, mean, std); }),
                   at::kFloat, at::kHalf, at::kBFloat16);
  });
  return self;
}

at::Tensor& bernoulli_(at::Tensor& self, double p, std::optional<at::Generator> generator) {
  TORCH_CHECK(p >= 0.0 && p <= 1.0, "bernoulli_ expects p to be in [0, 1], but got p=", p);
  // The dtypes the kernel below dispatches on, checked at the call (as the
  // CPU checks them) rather than inside the queued task.
  const at::ScalarType type = self.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED((at::isIntegralType(type, /*includeBool=*/true) && !at::isBarebonesUnsignedType(type)) ||
                                  type == at::kFloat || type == at::kDouble || type == at::kHalf ||
                                  type == at::kBFloat16,
                              "\"bernoulli_scalar_cpu_\" not implemented for '", at::toString(type), "'");
  const auto [seed, first] = reserve(self, generator);
  launch_fill(self, "aten::bernoulli_", [seed = seed, first = first, p](const at::Tensor& out) {
    AT_DISPATCH_ALL_TYPES_AND3(at::kHalf, at::kBFloat16, at::kBool, out.scalar_type(), "axon_bernoulli_", [&] {
      scalar_t* data = out.data_ptr<scalar_t>();
      for_each_draw(seed, first, out.numel(), [&](int64_t i, uint64_t bits) {
        data[i] = static_cast<scalar_t>(unit_interval(bits) < p ? 1 : 0);
      });
    });
  });
  return self;
}

namespace {

// x % divisor for a divisor fixed per kernel, without a 64-bit division per
// value (the division was most of randint's time): the direct remainder of
// Lemire, Kaser and Kurz ("Faster remainder by direct computation", 2019),
// x * ceil(2^128 / divisor) taken mod 2^128 and multiplied back by the
// divisor, whose top 64 bits are the remainder. With a 128-bit fraction it is
// exact for every 64-bit x and divisor >= 2.
class RemainderBy {
 public:
  explicit RemainderBy(uint64_t divisor)
      : divisor_(divisor), fraction_(divisor >= 2 ? ~static_cast<unsigned __int128>(0) / divisor + 1 : 0) {}

  uint64_t of(uint64_t x) const {
    if (divisor_ < 2) return 0;  // x % 1
    const unsigned __int128 fraction = fraction_ * x;
    const unsigned __int128 low = static_cast<unsigned __int128>(static_cast<uint64_t>(fraction)) * divisor_;
    const unsigned __int128 high = (fraction >> 64) * divisor_;
    return static_cast<uint64_t>((high + (low >> 64)) >> 64);
  }

 private:
  uint64_t divisor_;
  unsigned __int128 fraction_;
};

// Draws integers in [from, from + range) (range 0: all 2^64 values) as the
// element dtype.
at::Tensor& fill_random_integers(at::Tensor& self, int64_t from, uint64_t range,
                                 const std::optional<at::Generator>& generator) {
  const auto [seed, first] = reserve(self, generator);
  launch_fill(self, "aten::random_", [seed = seed, first = first, from, range](const at::Tensor& out) {
    AT_DISPATCH_V2(out.scalar_type(), "axon_random_", AT_WRAP([&] {
                     scalar_t* data = out.data_ptr<scalar_t>();
                     const RemainderBy remainder(range);
                     for_each_draw(seed, first, out.numel(), [&](int64_t i, uint64_t bits) {
                       const uint64_t offset = range == 0 ? bits : remainder.of(bits);
                       data[i] = static_cast<scalar_t>(static_cast<int64_t>(static_cast<uint64_t>(from) + offset));
                     });
                   }),
                   AT_EXPAND(AT_ALL_TYPES), at::kHalf, at::kBFloat16, at::kBool,
                   AT_EXPAND(AT_BAREBONES_UNSIGNED_TYPES));
  });
  return self;
}

}  // namespace

// The bounds and their checks follow the CPU's random_from_to_impl, so the
// same calls are refused with the same messages ("from is out of bounds for
// short int") and floating dtypes draw only integers they represent.
at::Tensor& random_from_(at::Tensor& self, int64_t from, std::optional<int64_t> to,
                         std::optional<at::Generator> generator) {
  namespace templates = at::native::templates;
  const at::ScalarType type = self.scalar_type();
  if (to.has_value()) {
    int64_t upper = *to;
    TORCH_CHECK(from < upper, "random_ expects 'from' to be less than 'to', but got from=", from, " >= to=", upper);
    if (at::isFloatingType(type)) {
      AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, type, "axon_random_update_from_to", [&] {
        from = templates::update_from<scalar_t>(from);
        upper = templates::update_to<scalar_t>(upper);
        TORCH_CHECK(from < upper,
                    "random_ expects 'from' casted to dtype to be less than 'to' casted to dtype, but got from=", from,
                    " >= to=", upper);
      });
    }
    templates::check_from_to_in_range(from, upper - 1, self.dtype());
    return fill_random_integers(self, from, static_cast<uint64_t>(upper) - static_cast<uint64_t>(from), generator);
  }
  if (from == std::numeric_limits<int64_t>::lowest()) {
    return fill_random_integers(self, from, 0, generator);
  }
  int64_t to_inclusive = 0;
  if (at::isFloatingType(type)) {
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, type, "axon_random_range", [&] {
      constexpr int64_t largest = int64_t{1} << std::numeric_limits<scalar_t>::digits;
      to_inclusive = largest;
      from = templates::update_from<scalar_t>(from);
      TORCH_CHECK(from < to_inclusive, "random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' ",
                  "casted to dtype, but got from=", from, " > to_inc=", to_inclusive);
    });
  } else if (type == at::kUInt64) {
    to_inclusive = std::numeric_limits<int64_t>::max();  // the largest bound an int64 `to` can name
  } else {
    AT_DISPATCH_V2(type, "axon_random_range", AT_WRAP([&] {
                     if constexpr (std::is_same_v<scalar_t, bool>) {
                       to_inclusive = 1;
                     } else {
                       to_inclusive = static_cast<int64_t>(std::numeric_limits<scalar_t>::max());
                     }
                   }),
                   AT_EXPAND(AT_INTEGRAL_TYPES_V2), at::kBool);
  }
  templates::check_from_to_in_range(from, to_inclusive, self.dtype());
  return fill_random_integers(self, from, static_cast<uint64_t>(to_inclusive) - static_cast<uint64_t>(from) + 1,
                              generator);
}

at::Tensor& random_to_(at::Tensor& self, int64_t to, std::optional<at::Generator> generator) {
  return random_from_(self, 0, to, generator);
}

at::Tensor& random_(at::Tensor& self, std::optional<at::Generator> generator) {
  if (self.scalar_type() == at::kUInt64) {
    return fill_random_integers(self, 0, 0, generator);  // every uint64 value
  }
  return random_from_(self, 0, std::nullopt, generator);
}

namespace {

// Dropout's mask and output in one pass over the draws, for float and double
// and 0 <= p < 1: the values of the unfused form below (mask.to(dtype) divided
// by 1 - p, then times x) bit for bit, without its three temporaries and four
// passes over memory. The scale is the dtype's 1 / (1 - p), as that division
// makes it, and a dropped element is x * 0, as there (a NaN stays NaN, a
// negative x gives -0). Half and bfloat16 keep the unfused form: ATen's
// vectorized rounding to them writes NaNs with other bits than its scalar
// rounding, so only that form gives its NaNs.
//
// An element is kept where unit_interval(bits) < keep_probability, that is
// where its top 53 bits, as an integer, are below keep_probability * 2^53
// rounded up (the product is exact); compared as integers, and the flags and
// products in loops of their own, the run vectorizes (per_instruction_set.h).
// Elements i .. min(i + 2 * blocks, end) - 1, from blocks first + i/2 on.
template <typename scalar_t>
inline void dropout_run(const scalar_t* in, scalar_t* out, bool* keep, int64_t i, int64_t blocks, int64_t end,
                        uint64_t seed, uint64_t first, uint64_t kept_below, scalar_t kept_scale) {
  uint32_t lanes[4][kBlocksPerStep];
  uint32_t* const lane_pointers[4] = {lanes[0], lanes[1], lanes[2], lanes[3]};
  philox_blocks(seed, first + static_cast<uint64_t>(i) / 2, blocks, lane_pointers);
  bool kept[2 * kBlocksPerStep];
  for (int64_t block = 0; block < blocks; ++block) {  // even elements take lanes 0 and 1, odd ones 2 and 3
    kept[2 * block] = ((static_cast<uint64_t>(lanes[0][block]) << 32 | lanes[1][block]) >> 11) < kept_below;
    kept[2 * block + 1] = ((static_cast<uint64_t>(lanes[2][block]) << 32 | lanes[3][block]) >> 11) < kept_below;
  }
  const int64_t count = std::min(2 * blocks, end - i);
  for (int64_t k = 0; k < count; ++k) {
    keep[i + k] = kept[k];
    out[i + k] = in[i + k] * (kept[k] ? kept_scale : static_cast<scalar_t>(0));
  }
}

AXON_PER_INSTRUCTION_SET
void dropout_run_float(const float* in, float* out, bool* keep, int64_t i, int64_t blocks, int64_t end, uint64_t seed,
                       uint64_t first, uint64_t kept_below, float kept_scale) {
  dropout_run(in, out, keep, i, blocks, end, seed, first, kept_below, kept_scale);
}

AXON_PER_INSTRUCTION_SET
void dropout_run_double(const double* in, double* out, bool* keep, int64_t i, int64_t blocks, int64_t end,
                        uint64_t seed, uint64_t first, uint64_t kept_below, double kept_scale) {
  dropout_run(in, out, keep, i, blocks, end, seed, first, kept_below, kept_scale);
}

void dropout_in_one_pass(const at::Tensor& source, const at::Tensor& output, bool* keep, uint64_t seed, uint64_t first,
                         double keep_probability) {
  const auto kept_below = static_cast<uint64_t>(std::ceil(keep_probability * 9007199254740992.0));
  const int64_t numel = source.numel();
  if (source.scalar_type() == at::kFloat) {
    const float* in = source.const_data_ptr<float>();
    float* out = output.data_ptr<float>();
    const float kept_scale = 1.0f / static_cast<float>(keep_probability);
    for_each_block_step(numel, [&](int64_t i, int64_t blocks, int64_t end) {
      dropout_run_float(in, out, keep, i, blocks, end, seed, first, kept_below, kept_scale);
    });
  } else {
    const double* in = source.const_data_ptr<double>();
    double* out = output.data_ptr<double>();
    const double kept_scale = 1.0 / keep_probability;
    for_each_block_step(numel, [&](int64_t i, int64_t blocks, int64_t end) {
      dropout_run_double(in, out, keep, i, blocks, end, seed, first, kept_below, kept_scale);
    });
  }
}

// Dropout of contiguous `source` into contiguous `output` and `mask`.
void run_dropout(const at::Tensor& source, const at::Tensor& output, const at::Tensor& mask, double p, uint64_t seed,
                 uint64_t first) {
  bool* keep = mask.data_ptr<bool>();
  // The mask is bernoulli_(1 - p) of the same draws, and the scaling
  // x * (mask / (1 - p)), as in ATen's unfused dropout, which in-place dropout uses:
  // `dropout(x)` and `dropout(x, inplace=True)` agree after the same seed.
  const double keep_probability = 1.0 - p;
  const at::ScalarType type = source.scalar_type();
  if (p < 1.0 && (type == at::kFloat || type == at::kDouble)) {
    dropout_in_one_pass(source, output, keep, seed, first, keep_probability);
    return;
  }
  for_each_draw(seed, first, source.numel(),
                [&](int64_t i, uint64_t bits) { keep[i] = unit_interval(bits) < keep_probability; });
  if (p < 1.0) {
    output.copy_(at::mul(source, mask.to(source.scalar_type()).div_(keep_probability)));
  } else {
    output.zero_();
  }
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p, std::optional<bool> train) {
  TORCH_CHECK(p >= 0.0 && p <= 1.0, "dropout probability has to be between 0 and 1, but got ", p);
  // Laid out as the CPU lays them out: as empty_like(input) (channels-last
  // input, even a sliced one, gives channels-last results).
  at::Tensor output = at::empty_like(input);
  at::Tensor mask = at::empty_like(input, input.options().dtype(at::kBool));
  if (train.has_value() && !*train) {
    output.copy_(input);
    mask.fill_(true);
    return {output, mask};
  }
  const auto [seed, first] =
      resolve_generator(std::nullopt, input.device().index())->reserve_blocks(blocks_for(input.numel()));
  if (input.numel() == 0) {
    return {output, mask};
  }
  HostAliases aliases;
  const at::Tensor input_alias = aliases.alias(input);
  const at::Tensor output_alias = aliases.alias(output, Access::overwrite);
  const at::Tensor mask_alias = aliases.alias(mask, Access::overwrite);
  launch_on_stream(current_stream_handle(input.device().index()), "aten::native_dropout", aliases,
                   [=, seed = seed, first = first]() {
                     const at::Tensor source = input_alias.contiguous();
                     // Draws go to elements in their logical order (as bernoulli_ on any layout); results
                     // laid out otherwise are computed in that order and copied into place.
                     const bool in_order = output_alias.is_contiguous() && mask_alias.is_contiguous();
                     const at::Tensor output_in_order = in_order ? output_alias : at::empty_like(source);
                     const at::Tensor mask_in_order =
                         in_order ? mask_alias : at::empty_like(source, source.options().dtype(at::kBool));
                     run_dropout(source, output_in_order, mask_in_order, p, seed, first);
                     if (!in_order) {
                       output_alias.copy_(output_in_order);
                       mask_alias.copy_(mask_in_order);
                     }
                   });
  return {output, mask};
}

}  // namespace axon
