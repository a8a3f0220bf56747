#include "host_execution/scatter_gather_rows.h"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace axon {
namespace {

bool outside(int64_t index, int64_t extent) { return static_cast<uint64_t>(index) >= static_cast<uint64_t>(extent); }

// Raises the CPU's error (its message and type) for the out-of-bounds index
// its kernel meets first on one thread: slice by slice, row by row, column by
// column, or rows outermost (ScatterGatherShape::rows_checked_first). Runs
// only once an index is known to be out of bounds.
[[noreturn]] void raise_out_of_bounds(const int64_t* index, const ScatterGatherShape& shape) {
  const auto index_at = [&](int64_t o, int64_t r, int64_t n) { return index[(o * shape.rows + r) * shape.inner + n]; };
  for (int64_t a = 0; a < (shape.rows_checked_first ? shape.rows : shape.outer); ++a) {
    for (int64_t b = 0; b < (shape.rows_checked_first ? shape.outer : shape.rows); ++b) {
      for (int64_t n = 0; n < shape.inner; ++n) {
        const int64_t k = shape.rows_checked_first ? index_at(b, a, n) : index_at(a, b, n);
        TORCH_CHECK(!outside(k, shape.extent), "index ", k, " is out of bounds for dimension ", shape.dim,
                    " with size ", shape.extent);
      }
    }
  }
  TORCH_CHECK(false, "scatter_gather_rows: no index out of bounds after all");
}

// Runs body(o, first, last) over every column [first, last) of every outer
// slice o, the (o, column) pairs split among the OpenMP team in contiguous
// runs. A body walks its columns through all rows, row after row, so no
// two tasks share a destination element.
template <class Body>
void for_each_column_run(const ScatterGatherShape& shape, const Body& body) {
  // At least 32K index elements per task: smaller ones are not worth a second thread.
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(1, shape.rows));
  at::parallel_for(0, shape.outer * shape.inner, grain, [&](int64_t begin, int64_t end) {
    while (begin < end) {
      const int64_t o = begin / shape.inner, first = begin % shape.inner;
      const int64_t last = std::min(shape.inner, first + (end - begin));
      body(o, first, last);
      begin += last - first;
    }
  });
}

// gather along the last dimension (inner 1: each column run is one whole
// outer slice): the slice's index row read straight through. The general
// body below would run a one-column loop per element there, 2.5-3x the CPU
// kernel's time on a 2048x1024 index (docs/benchmarks.md, stop 55).
template <class Element>
void gather_last_dimension(const Element* source, const int64_t* index, Element* result,
                           const ScatterGatherShape& shape) {
  std::atomic<bool> out_of_bounds{false};
  for_each_column_run(shape, [&](int64_t o, int64_t, int64_t) {
    const Element* slice = source + o * shape.extent;
    const int64_t* row_index = index + o * shape.rows;
    Element* row_result = result + o * shape.rows;
    bool outside_any = false;
    for (int64_t r = 0; r < shape.rows; ++r) {
      const int64_t k = row_index[r];
      if (outside(k, shape.extent)) {
        outside_any = true;
        continue;
      }
      row_result[r] = slice[k];
    }
    if (outside_any) out_of_bounds.store(true, std::memory_order_relaxed);
  });
  if (out_of_bounds.load(std::memory_order_relaxed)) raise_out_of_bounds(index, shape);
}

template <class Element>
void gather_of(const Element* source, const int64_t* index, Element* result, const ScatterGatherShape& shape) {
  if (shape.inner == 1) return gather_last_dimension(source, index, result, shape);
  std::atomic<bool> out_of_bounds{false};
  for_each_column_run(shape, [&](int64_t o, int64_t first, int64_t last) {
    const Element* slice = source + o * shape.extent * shape.inner;
    for (int64_t r = 0; r < shape.rows; ++r) {
      const int64_t row = (o * shape.rows + r) * shape.inner;
      const int64_t* row_index = index + row;
      Element* row_result = result + row;
      for (int64_t n = first; n < last; ++n) {
        const int64_t k = row_index[n];
        if (outside(k, shape.extent)) {
          out_of_bounds.store(true, std::memory_order_relaxed);
          continue;
        }
        row_result[n] = slice[k * shape.inner + n];
      }
    }
  });
  if (out_of_bounds.load(std::memory_order_relaxed)) raise_out_of_bounds(index, shape);
}

template <class Element>
void scatter_add_of(Element* destination, const int64_t* index, const Element* source,
                    const ScatterGatherShape& shape) {
  std::atomic<bool> out_of_bounds{false};
  const int64_t count = shape.outer * shape.rows * shape.inner;
  at::parallel_for(0, count, int64_t{1} << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      if (outside(index[i], shape.extent)) out_of_bounds.store(true, std::memory_order_relaxed);
    }
  });
  if (out_of_bounds.load(std::memory_order_relaxed)) raise_out_of_bounds(index, shape);
  if (shape.inner == 1) {  // along the last dimension: each slice's index row straight through, in row order
    for_each_column_run(shape, [&](int64_t o, int64_t, int64_t) {
      Element* slice = destination + o * shape.extent;
      const int64_t* row_index = index + o * shape.rows;
      const Element* row_source = source + o * shape.rows;
      for (int64_t r = 0; r < shape.rows; ++r) slice[row_index[r]] += row_source[r];
    });
    return;
  }
  for_each_column_run(shape, [&](int64_t o, int64_t first, int64_t last) {
    Element* slice = destination + o * shape.extent * shape.inner;
    for (int64_t r = 0; r < shape.rows; ++r) {
      const int64_t row = (o * shape.rows + r) * shape.inner;
      const int64_t* row_index = index + row;
      const Element* row_source = source + row;
      for (int64_t n = first; n < last; ++n) slice[row_index[n] * shape.inner + n] += row_source[n];
    }
  });
}

}  // namespace

void gather_rows(const void* source, const int64_t* index, void* result, int64_t element_size,
                 const ScatterGatherShape& shape) {
  // Elements are copied as bits, so one kernel per element size serves every dtype.
  switch (element_size) {
    case 1:
      return gather_of(static_cast<const uint8_t*>(source), index, static_cast<uint8_t*>(result), shape);
    case 2:
      return gather_of(static_cast<const uint16_t*>(source), index, static_cast<uint16_t*>(result), shape);
    case 4:
      return gather_of(static_cast<const uint32_t*>(source), index, static_cast<uint32_t*>(result), shape);
    case 8:
      return gather_of(static_cast<const uint64_t*>(source), index, static_cast<uint64_t*>(result), shape);
    default:
      TORCH_CHECK(false, "gather_rows: unsupported element size ", element_size);
  }
}

void scatter_add_rows(void* destination, const int64_t* index, const void* source, bool is_double,
                      const ScatterGatherShape& shape) {
  if (is_double) {
    scatter_add_of(static_cast<double*>(destination), index, static_cast<const double*>(source), shape);
  } else {
    scatter_add_of(static_cast<float*>(destination), index, static_cast<const float*>(source), shape);
  }
}

}  // namespace axon
