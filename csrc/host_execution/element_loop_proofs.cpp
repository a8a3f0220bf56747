#include "host_execution/element_loop_proofs.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/add.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/sqrt.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/Scalar.h>
#include <c10/util/Exception.h>

#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <vector>

#include "host_execution/one_host_thread.h"

namespace axon {
namespace {

constexpr int kOps = static_cast<int>(ElementOp::kCount);

// Elements of the probe: a long run for the vectorized path, with a tail.
constexpr int64_t kProbeElements = 4096 + 13;
// Slices of three elements, shorter than a vector of any width the CPU
// kernels use, so that ATen computes every element of a slice on its scalar
// path; over the probe's first elements.
constexpr int64_t kScalarSlice = 3;
constexpr int64_t kScalarProbeElements = 600;
static_assert(kScalarProbeElements % kScalarSlice == 0);

// The numbers each probe runs with: (scalar, alpha). Weights below and above
// one half (lerp's two formulas), a negative, and AdamW's epsilon.
constexpr std::array<std::array<double, 2>, 4> kProbeNumbers = {{{0.1, 1.0}, {0.9, 0.37}, {-2.75, -3.0}, {1e-8, 0.37}}};

uint64_t next_random(uint64_t& state) {  // splitmix64
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Probe values: signed, magnitudes 2^-24..2^24 with random mantissas, and
// every 61st element one of the awkward ones. Own generator: the proof must
// not move torch's.
template <typename T>
void fill_probe(T* values, int64_t n, uint64_t seed) {
  const T awkward[] = {T(0),
                       -T(0),
                       std::numeric_limits<T>::infinity(),
                       -std::numeric_limits<T>::infinity(),
                       std::numeric_limits<T>::quiet_NaN(),
                       std::numeric_limits<T>::denorm_min(),
                       T(1),
                       T(-1)};
  uint64_t state = seed;
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t bits = next_random(state);
    if (i % 61 == 60) {
      values[i] = awkward[bits % (sizeof(awkward) / sizeof(awkward[0]))];
      continue;
    }
    const T mantissa = T(1) + static_cast<T>(bits >> 11) * static_cast<T>(0x1.0p-53);
    const int exponent = static_cast<int>((bits >> 1) % 49) - 24;
    values[i] = std::ldexp(mantissa, exponent) * ((bits & 1) ? T(-1) : T(1));
  }
}

// The CPU kernel the chains' tile path calls for `op`, on CPU tensors:
// x is written, y and z read (y's first element as a 0-dim tensor where
// the op takes a number tensor).
void run_cpu_kernel(ElementOp op, at::Tensor& x, const at::Tensor& y, const at::Tensor& z, const c10::Scalar& s,
                    const c10::Scalar& a) {
  switch (op) {
    case ElementOp::kAddScalar:
      x.add_(s);
      return;
    case ElementOp::kAddList:
      x.add_(y, a);
      return;
    case ElementOp::kSubList:
      x.sub_(y, a);
      return;
    case ElementOp::kAddListOut:
      at::add_out(x, y, z, a);
      return;
    case ElementOp::kMulScalar:
      x.mul_(s);
      return;
    case ElementOp::kMulList:
      x.mul_(y);
      return;
    case ElementOp::kMulNumber:
      x.mul_(y.select(0, 0));
      return;
    case ElementOp::kDivScalar:
      x.div_(s);
      return;
    case ElementOp::kDivList:
      x.div_(y);
      return;
    case ElementOp::kDivNumber:
      x.div_(y.select(0, 0));
      return;
    case ElementOp::kLerpScalar:
      x.lerp_(y, s);
      return;
    case ElementOp::kAddcmul:
      x.addcmul_(y, z, s);
      return;
    case ElementOp::kAddcdiv:
      x.addcdiv_(y, z, s);
      return;
    case ElementOp::kSqrt:
      x.sqrt_();
      return;
    case ElementOp::kSqrtOut:
      at::sqrt_out(x, y);
      return;
    case ElementOp::kCount:
      break;
  }
}

// The first kScalarProbeElements of `values` as rows of kScalarSlice, each
// row followed by one unused element. Why: TensorIterator cannot merge rows
// whose strides leave a gap, so a CPU kernel over this view runs its inner
// loop once per row, on three elements: every slice on the scalar path, in
// one call rather than one call per slice (200 calls per probe numbers took
// 1-4 ms of an optimizer operator's first call).
at::Tensor slices_with_gaps(const at::Tensor& values) {
  constexpr int64_t rows = kScalarProbeElements / kScalarSlice;
  at::Tensor slices = at::empty({rows, kScalarSlice + 1}, values.options()).narrow(1, 0, kScalarSlice);
  slices.copy_(values.narrow(0, 0, kScalarProbeElements).view({rows, kScalarSlice}));
  return slices;
}

template <typename T>
bool same_values(const at::Tensor& a, const at::Tensor& b) {
  const T* left = a.const_data_ptr<T>();
  const T* right = b.const_data_ptr<T>();
  for (int64_t i = 0; i < a.numel(); ++i) {
    if (std::memcmp(&left[i], &right[i], sizeof(T)) != 0 && !(std::isnan(left[i]) && std::isnan(right[i]))) {
      return false;
    }
  }
  return true;
}

// Per candidate of `op` on `dtype`, whether it gives the CPU kernel's values
// on every probe. The CPU kernel runs once per probe numbers, for all of them.
template <typename T>
std::vector<bool> verdicts(ElementOp op, at::ScalarType dtype, const ElementLoop* candidates, std::size_t count) {
  std::vector<bool> proven(count, true);
  const auto options = at::TensorOptions().dtype(dtype);
  at::Tensor x = at::empty({kProbeElements}, options);
  at::Tensor y = at::empty({kProbeElements}, options);
  at::Tensor z = at::empty({kProbeElements}, options);
  fill_probe(x.mutable_data_ptr<T>(), kProbeElements, 1);
  fill_probe(y.mutable_data_ptr<T>(), kProbeElements, 2);
  fill_probe(z.mutable_data_ptr<T>(), kProbeElements, 3);
  const bool number_operand = op == ElementOp::kMulNumber || op == ElementOp::kDivNumber;
  for (const auto& [scalar_number, alpha_number] : kProbeNumbers) {
    const c10::Scalar scalar(scalar_number), alpha(alpha_number);
    // The CPU kernel over the whole run (vectorized) and over short slices (scalar).
    at::Tensor vectorized = x.clone();
    run_cpu_kernel(op, vectorized, y, z, scalar, alpha);
    at::Tensor scalar_path = slices_with_gaps(x);
    run_cpu_kernel(op, scalar_path, number_operand ? y : slices_with_gaps(y), slices_with_gaps(z), scalar, alpha);
    // Where the kernel's two paths disagree, no loop can give both.
    if (!same_values<T>(vectorized.narrow(0, 0, kScalarProbeElements), scalar_path.contiguous().view(-1))) {
      return std::vector<bool>(count, false);
    }
    for (std::size_t candidate = 0; candidate < count; ++candidate) {
      if (!proven[candidate]) continue;
      // The loop, in blocks of uneven lengths, as chains cut tiles.
      at::Tensor looped = x.clone();
      char* const bases[3] = {static_cast<char*>(looped.mutable_data_ptr()), static_cast<char*>(y.mutable_data_ptr()),
                              static_cast<char*>(z.mutable_data_ptr())};
      for (int64_t first = 0, block = 1; first < kProbeElements; first += block, block = block * 3 + 1) {
        const int64_t length = std::min(block, kProbeElements - first);
        const auto offset = static_cast<std::ptrdiff_t>(first) * static_cast<std::ptrdiff_t>(sizeof(T));
        char* operands[4] = {bases[0] + offset, number_operand ? bases[1] : bases[1] + offset, bases[2] + offset,
                             nullptr};
        candidates[candidate](operands, length, element_loop_number(scalar, dtype),
                              element_loop_alpha(op, alpha, dtype));
      }
      proven[candidate] = same_values<T>(vectorized, looped);
    }
  }
  return proven;
}

ElementLoop choose(ElementOp op, at::ScalarType dtype) {
  const std::vector<bool> proven = element_loop_candidates_proven(op, dtype);
  std::size_t count = 0;
  const ElementLoop* candidates = element_loop_candidates(op, dtype == at::kDouble, &count);
  for (std::size_t i = 0; i < count; ++i) {
    if (proven[i]) return candidates[i];
  }
  return nullptr;
}

std::atomic<bool> enabled{true};

}  // namespace

std::vector<bool> element_loop_candidates_proven(ElementOp op, at::ScalarType dtype) {
  TORCH_CHECK(dtype == at::kFloat || dtype == at::kDouble, "element loops are for float and double, not ", dtype);
  // Probe tensors are plain CPU temporaries: no autograd, no versions.
  c10::InferenceMode inference;
  // On the dispatching thread: a parallel region here (ATen's vector math
  // splits 4109 elements) would give this thread an OpenMP team of its own,
  // which slows every parallel kernel of the device's worker from then on
  // (one_host_thread.h).
  const OneHostThreadScope one_thread;
  std::size_t count = 0;
  const ElementLoop* candidates = element_loop_candidates(op, dtype == at::kDouble, &count);
  return dtype == at::kDouble ? verdicts<double>(op, dtype, candidates, count)
                              : verdicts<float>(op, dtype, candidates, count);
}

ElementLoop proven_element_loop(ElementOp op, at::ScalarType dtype) {
  if (!enabled.load(std::memory_order_relaxed) || (dtype != at::kFloat && dtype != at::kDouble)) return nullptr;
  static std::array<std::array<std::once_flag, 2>, kOps> proved;
  static std::array<std::array<ElementLoop, 2>, kOps> chosen{};
  const int kind = dtype == at::kDouble ? 1 : 0;
  const int index = static_cast<int>(op);
  std::call_once(proved[index][kind], [&] { chosen[index][kind] = choose(op, dtype); });
  return chosen[index][kind];
}

double element_loop_number(const c10::Scalar& number, at::ScalarType dtype) {
  // A plain cast from the number's own type, as the CPU kernels read a
  // wrapped number: 1e300 times a float tensor is inf there, not an error.
  const auto in_dtype = [dtype](auto value) {
    return dtype == at::kDouble ? static_cast<double>(value) : static_cast<double>(static_cast<float>(value));
  };
  switch (number.type()) {
    case at::kLong:
      return in_dtype(number.toLong());
    case at::kUInt64:
      return in_dtype(number.toUInt64());
    case at::kBool:
      return in_dtype(number.toBool());
    default:
      return in_dtype(number.toDouble());
  }
}

double element_loop_alpha(ElementOp op, const c10::Scalar& alpha, at::ScalarType dtype) {
  // Checked, unlike a number: the CPU kernels convert alpha with Scalar::to,
  // which raises where the dtype cannot hold it.
  const c10::Scalar value = op == ElementOp::kSubList ? -alpha : alpha;
  return dtype == at::kDouble ? value.to<double>() : static_cast<double>(value.to<float>());
}

void set_element_loops_enabled(bool value) { enabled.store(value, std::memory_order_relaxed); }
bool element_loops_enabled() { return enabled.load(std::memory_order_relaxed); }

}  // namespace axon
