// Plain element loops for the foreach chains' arithmetic on float and double,
// each a candidate twin of one of PyTorch's CPU kernels.
//
// Why: a chain (foreach_chains.h) that runs the CPU kernels tile by tile
// pays, per call and tile, for a TensorIterator, a view and the dispatcher,
// and each call sweeps the tile from L2. These loops take raw pointers, so
// a chain can run every call on a block small enough for L1 at no cost per
// call. They are used only where element_loop_proofs.h has shown, on this
// machine, that one of them gives the CPU kernel's values bit for bit.
//
// Each operator has one or more candidates: the ways its CPU kernel may
// compute an element (with a fused multiply-add or a rounded product and
// sum; a quotient or a product with the reciprocal). The file is compiled
// with -ffp-contract=off, so each candidate is exactly the sequence of
// roundings it spells out, on every instruction set it is cloned for.
#pragma once

#include <cstddef>
#include <cstdint>

namespace axon {

// One call over `n` elements of contiguous operands, in place in operands[0].
// operands[1..] are the call's other lists (pointers at the same element), or
// a 0-dim number tensor (read at its first element). `scalar` and `alpha`
// hold values of the element type exactly (converted from c10::Scalar as the
// CPU kernel converts them).
using ElementLoop = void (*)(char* const* operands, int64_t n, double scalar, double alpha);

// The calls chains run. The names say what operands[0] becomes; x is
// operands[0], y operands[1], z operands[2], s the scalar, a alpha.
enum class ElementOp : int {
  kAddScalar,   // x + s
  kAddList,     // x + a*y (add_ with alpha)
  kSubList,     // x + a*y with a = -alpha (sub_; see element_loop_alpha)
  kAddListOut,  // y + a*z (result list first)
  kMulScalar,   // x * s
  kMulList,     // x * y
  kMulNumber,   // x * y[0]
  kDivScalar,   // x / s
  kDivList,     // x / y
  kDivNumber,   // x / y[0]
  kLerpScalar,  // x + s*(y - x)
  kAddcmul,     // x + s*y*z
  kAddcdiv,     // x + s*y/z
  kSqrt,        // sqrt(x)
  kSqrtOut,     // sqrt(y) (result list first)
  kCount,
};

// The candidates for `op` on float (is_double false) or double, in the order
// they are tried. Sets *count; the array lives as long as the program.
const ElementLoop* element_loop_candidates(ElementOp op, bool is_double, std::size_t* count);

}  // namespace axon
