// Which element loop (element_loops.h) reproduces a CPU kernel, proven on
// this machine.
//
// Why: whether PyTorch's CPU kernel for, say, addcmul_ rounds its product
// before the sum depends on how that kernel was compiled (a fused
// multiply-add where the compiler contracted one, or where ATen calls one)
// and on the instruction set it picked at load. Nothing in the wheel states
// it, so the first call that needs a loop runs each candidate and the CPU
// kernel over the same probe values and keeps the first candidate whose
// every element matches: through the kernel's vectorized path (one long
// tensor) and its scalar path (slices shorter than a vector), for weights
// below and above one half, negative and tiny numbers, and infinities,
// zeros and NaNs among the elements. Equal means the same bits, except that
// any NaN equals any NaN (their sign and payload follow operand order,
// which neither side fixes). Where no candidate matches, or the CPU kernel's
// two paths disagree with each other, there is no loop and chains run the
// CPU kernel itself.
#pragma once

#include <c10/core/Scalar.h>
#include <c10/core/ScalarType.h>

#include <vector>

#include "host_execution/element_loops.h"

namespace axon {

// The loop that computes `op` on `dtype` elements as this machine's CPU
// kernel does, or nullptr (any dtype but float and double, or no candidate
// proven). The proof runs once per operator and dtype, on the first caller.
ElementLoop proven_element_loop(ElementOp op, at::ScalarType dtype);

// A call's number as its loop takes it: converted to the element type
// (float or double) as the CPU kernel converts it, a plain cast (1e300 is inf
// in float), held exactly in a double.
double element_loop_number(const c10::Scalar& number, at::ScalarType dtype);
// A call's alpha as `op`'s loop takes it: for sub, negated first as a Scalar
// (ATen's sub is add with -alpha, negated before any conversion, so an
// integer's negation wraps as it does there).
double element_loop_alpha(ElementOp op, const c10::Scalar& alpha, at::ScalarType dtype);

// Per candidate of `op` on `dtype` (float or double), in order, whether it
// reproduces the CPU kernel: the proof, run anew (proven_element_loop keeps
// the first that does; tests ask for all).
std::vector<bool> element_loop_candidates_proven(ElementOp op, at::ScalarType dtype);

// For tests and benchmarks: when false, proven_element_loop returns nullptr
// (chains then run the CPU kernels tile by tile).
void set_element_loops_enabled(bool enabled);
bool element_loops_enabled();

}  // namespace axon
