#include "host_execution/element_loops.h"

#include <cmath>
#include <cstdint>

#include "host_execution/mkl_vector_math.h"
#include "host_execution/per_instruction_set.h"

// This file is compiled with -ffp-contract=off and -fno-math-errno
// (csrc/CMakeLists.txt): products and sums stay separately rounded unless a
// candidate asks for a fused multiply-add, and square roots vectorize.

// PyTorch's CPU square root calls MKL's vector square root where its build
// has MKL, in MKL's high-accuracy mode, which is not always the correctly
// rounded root (mkl_vector_math.h); without MKL the candidates that use it
// are left out.

namespace axon {
namespace {

// The loops are compiled per instruction set (per_instruction_set.h). The
// baseline x86-64 copy has no fused multiply-add instruction: there
// __builtin_fma is a library call, just as exact.

inline float fused_multiply_add(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
inline double fused_multiply_add(double a, double b, double c) { return __builtin_fma(a, b, c); }
inline float square_root(float a) { return __builtin_sqrtf(a); }
inline double square_root(double a) { return __builtin_sqrt(a); }

// The element formulas. Each takes x, y, z (unused ones are 0), s and a.
// Where a CPU kernel's vectorized and scalar paths spell a formula
// differently, the candidates below are the roundings either may amount to.
template <typename T>
struct Formulas {
  static T add_scalar(T x, T, T, T s, T) { return x + s; }
  static T add_fused(T x, T y, T, T, T a) { return fused_multiply_add(y, a, x); }
  static T add_rounded(T x, T y, T, T, T a) { return x + a * y; }
  static T mul_scalar(T x, T, T, T s, T) { return x * s; }
  static T mul(T x, T y, T, T, T) { return x * y; }
  static T div_scalar(T x, T, T, T s, T) { return x / s; }
  static T div_by_reciprocal(T x, T, T, T s, T) { return x * (T(1) / s); }
  static T div(T x, T y, T, T, T) { return x / y; }
  // Lerp, as ATen writes it: from x for small weights, from y for the others.
  static T lerp_fused(T x, T y, T, T w, T) {
    const T difference = y - x;
    return std::abs(w) < T(0.5) ? fused_multiply_add(w, difference, x) : fused_multiply_add(w - T(1), difference, y);
  }
  static T lerp_rounded(T x, T y, T, T w, T) {
    const T difference = y - x;
    return std::abs(w) < T(0.5) ? x + w * difference : y - difference * (T(1) - w);
  }
  static T addcmul_fused(T x, T y, T z, T s, T) { return fused_multiply_add(s * y, z, x); }
  static T addcmul_rounded(T x, T y, T z, T s, T) { return x + s * y * z; }
  static T addcdiv(T x, T y, T z, T s, T) { return x + s * y / z; }
  static T sqrt(T x, T, T, T, T) { return square_root(x); }
};

// How a formula reaches its operands.
enum class Shape {
  kUnary,      // x = f(x)
  kBinary,     // x = f(x, y)
  kTernary,    // x = f(x, y, z)
  kNumber,     // x = f(x, y[0])
  kBinaryOut,  // x = f(y, z), through a formula of (y, z)
  kUnaryOut,   // x = f(y)
};

template <typename T, Shape shape, T (*formula)(T, T, T, T, T)>
[[gnu::always_inline]] inline void loop(char* const* operands, int64_t n, double scalar, double alpha) {
  T* x = reinterpret_cast<T*>(operands[0]);
  const T s = static_cast<T>(scalar);
  const T a = static_cast<T>(alpha);
  if constexpr (shape == Shape::kUnary) {
    for (int64_t i = 0; i < n; ++i) x[i] = formula(x[i], T(0), T(0), s, a);
  } else if constexpr (shape == Shape::kBinary) {
    const T* y = reinterpret_cast<const T*>(operands[1]);
    for (int64_t i = 0; i < n; ++i) x[i] = formula(x[i], y[i], T(0), s, a);
  } else if constexpr (shape == Shape::kTernary) {
    const T* y = reinterpret_cast<const T*>(operands[1]);
    const T* z = reinterpret_cast<const T*>(operands[2]);
    for (int64_t i = 0; i < n; ++i) x[i] = formula(x[i], y[i], z[i], s, a);
  } else if constexpr (shape == Shape::kNumber) {
    const T y = *reinterpret_cast<const T*>(operands[1]);
    for (int64_t i = 0; i < n; ++i) x[i] = formula(x[i], y, T(0), s, a);
  } else if constexpr (shape == Shape::kBinaryOut) {
    const T* y = reinterpret_cast<const T*>(operands[1]);
    const T* z = reinterpret_cast<const T*>(operands[2]);
    for (int64_t i = 0; i < n; ++i) x[i] = formula(y[i], z[i], T(0), s, a);
  } else {
    const T* y = reinterpret_cast<const T*>(operands[1]);
    for (int64_t i = 0; i < n; ++i) x[i] = formula(y[i], T(0), T(0), s, a);
  }
}

// One cloned function per element type, shape and formula.
#define AXON_ELEMENT_LOOP(name, shape, formula)                                                \
  AXON_PER_INSTRUCTION_SET void name##_float(char* const* o, int64_t n, double s, double a) {  \
    loop<float, Shape::shape, &Formulas<float>::formula>(o, n, s, a);                          \
  }                                                                                            \
  AXON_PER_INSTRUCTION_SET void name##_double(char* const* o, int64_t n, double s, double a) { \
    loop<double, Shape::shape, &Formulas<double>::formula>(o, n, s, a);                        \
  }

AXON_ELEMENT_LOOP(add_scalar, kUnary, add_scalar)
AXON_ELEMENT_LOOP(add_fused, kBinary, add_fused)
AXON_ELEMENT_LOOP(add_rounded, kBinary, add_rounded)
AXON_ELEMENT_LOOP(add_out_fused, kBinaryOut, add_fused)
AXON_ELEMENT_LOOP(add_out_rounded, kBinaryOut, add_rounded)
AXON_ELEMENT_LOOP(mul_scalar, kUnary, mul_scalar)
AXON_ELEMENT_LOOP(mul, kBinary, mul)
AXON_ELEMENT_LOOP(mul_number, kNumber, mul)
AXON_ELEMENT_LOOP(div_scalar, kUnary, div_scalar)
AXON_ELEMENT_LOOP(div_by_reciprocal, kUnary, div_by_reciprocal)
AXON_ELEMENT_LOOP(div, kBinary, div)
AXON_ELEMENT_LOOP(div_number, kNumber, div)
AXON_ELEMENT_LOOP(lerp_fused, kBinary, lerp_fused)
AXON_ELEMENT_LOOP(lerp_rounded, kBinary, lerp_rounded)
AXON_ELEMENT_LOOP(addcmul_fused, kTernary, addcmul_fused)
AXON_ELEMENT_LOOP(addcmul_rounded, kTernary, addcmul_rounded)
AXON_ELEMENT_LOOP(addcdiv, kTernary, addcdiv)
AXON_ELEMENT_LOOP(sqrt, kUnary, sqrt)
AXON_ELEMENT_LOOP(sqrt_out, kUnaryOut, sqrt)

#undef AXON_ELEMENT_LOOP

bool mkl_square_roots() { return vmsSqrt != nullptr && vmdSqrt != nullptr; }

// n is at most a tile (foreach_chains.cpp) or a probe (element_loop_proofs.cpp), far inside MKL's int.
void mkl_sqrt_float(char* const* o, int64_t n, double, double) {
  vmsSqrt(static_cast<int>(n), reinterpret_cast<const float*>(o[0]), reinterpret_cast<float*>(o[0]),
          kMklVectorMathMode);
}
void mkl_sqrt_double(char* const* o, int64_t n, double, double) {
  vmdSqrt(static_cast<int>(n), reinterpret_cast<const double*>(o[0]), reinterpret_cast<double*>(o[0]),
          kMklVectorMathMode);
}
void mkl_sqrt_out_float(char* const* o, int64_t n, double, double) {
  vmsSqrt(static_cast<int>(n), reinterpret_cast<const float*>(o[1]), reinterpret_cast<float*>(o[0]),
          kMklVectorMathMode);
}
void mkl_sqrt_out_double(char* const* o, int64_t n, double, double) {
  vmdSqrt(static_cast<int>(n), reinterpret_cast<const double*>(o[1]), reinterpret_cast<double*>(o[0]),
          kMklVectorMathMode);
}

// Candidates per operator, in ElementOp order, float then double.
struct Candidates {
  ElementLoop loops[2][2];  // [is_double][candidate]
  std::size_t count;
};

#define AXON_ONE(name) {{{&name##_float, nullptr}, {&name##_double, nullptr}}, 1}
#define AXON_TWO(first, second) {{{&first##_float, &second##_float}, {&first##_double, &second##_double}}, 2}

const Candidates kCandidates[] = {
    AXON_ONE(add_scalar),                      // kAddScalar
    AXON_TWO(add_fused, add_rounded),          // kAddList
    AXON_TWO(add_fused, add_rounded),          // kSubList, with alpha negated
    AXON_TWO(add_out_fused, add_out_rounded),  // kAddListOut
    AXON_ONE(mul_scalar),                      // kMulScalar
    AXON_ONE(mul),                             // kMulList
    AXON_ONE(mul_number),                      // kMulNumber
    AXON_TWO(div_scalar, div_by_reciprocal),   // kDivScalar
    AXON_ONE(div),                             // kDivList
    AXON_ONE(div_number),                      // kDivNumber
    AXON_TWO(lerp_fused, lerp_rounded),        // kLerpScalar
    AXON_TWO(addcmul_fused, addcmul_rounded),  // kAddcmul
    AXON_ONE(addcdiv),                         // kAddcdiv
    AXON_TWO(mkl_sqrt, sqrt),                  // kSqrt: MKL's first, left out where missing
    AXON_TWO(mkl_sqrt_out, sqrt_out),          // kSqrtOut
};
static_assert(sizeof(kCandidates) / sizeof(kCandidates[0]) == static_cast<std::size_t>(ElementOp::kCount));

#undef AXON_ONE
#undef AXON_TWO

}  // namespace

const ElementLoop* element_loop_candidates(ElementOp op, bool is_double, std::size_t* count) {
  const Candidates& candidates = kCandidates[static_cast<int>(op)];
  const ElementLoop* loops = candidates.loops[is_double ? 1 : 0];
  if ((op == ElementOp::kSqrt || op == ElementOp::kSqrtOut) && !mkl_square_roots()) {
    *count = 1;
    return loops + 1;
  }
  *count = candidates.count;
  return loops;
}

}  // namespace axon
