// gather and scatter_add along one dimension of contiguous tensors, read
// in the index's own order: axon's kernels behind the direct gather,
// scatter_add and scatter_add_ (direct_scatter_gather.cpp).
//
// Why: the CPU's kernels walk every index column along `dim` before moving
// to the next column whenever a row is shorter than the dimension (dim 0 of
// a 4096×1024 index, for one), so every element they touch, in the index,
// the result and the source alike, is a cache line of its own: about
// 4 GB/s. Here the index and the result (or source) are read row by row,
// and only the gathered (or updated) elements land where the index says.
//
// Results equal the CPU's in every bit. gather copies elements. scatter_add
// adds into each destination element in index-row order, from the first
// row to the last, as the CPU's kernel does; threads split the columns, so
// no two of them ever add into one element.
#pragma once

#include <cstdint>

namespace axon {

// The operands viewed as [outer, rows, inner] around `dim`: the index (and
// the result of gather, the source of scatter_add) has `rows` rows there,
// the tensor gathered from or scattered into has `extent`; the sizes
// before and after `dim` are equal in all of them.
struct ScatterGatherShape {
  int64_t outer;
  int64_t rows;
  int64_t extent;
  int64_t inner;
  int64_t dim;  // for the out-of-bounds message only
  // Whether the CPU's kernel checks indices row by row across the outer
  // slices (where `dim` is followed only by size-1 dimensions and is not
  // the last) rather than slice by slice: that order decides which index
  // its error names when several are out of bounds.
  bool rows_checked_first;
};

// result[o, r, n] = source[o, index[o, r, n], n] for `element_size`-byte
// elements (1, 2, 4 or 8), split among the calling thread's OpenMP team.
// Throws the CPU's error if an index is outside [0, extent), naming the one
// the CPU's kernel names when it runs on one thread; the result is then
// unspecified.
void gather_rows(const void* source, const int64_t* index, void* result, int64_t element_size,
                 const ScatterGatherShape& shape);

// destination[o, index[o, r, n], n] += source[o, r, n] for float (or, where
// `is_double`, double) elements. Every index is checked first: if one is
// outside [0, extent) it throws the CPU's error with the destination
// untouched.
void scatter_add_rows(void* destination, const int64_t* index, const void* source, bool is_double,
                      const ScatterGatherShape& shape);

}  // namespace axon
