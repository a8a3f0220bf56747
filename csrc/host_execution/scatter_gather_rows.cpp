#include "host_execution/scatter_gather_rows.h"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace axon {
namespace {

// The first out-of-bounds index any task met, kept by whichever task
// reports first; read after at::parallel_for has joined its team.
class OutOfBounds {
 public:
  void report(int64_t index) {
    if (!found_.exchange(true, std::memory_order_relaxed)) value_ = index;
  }
  // Raises the CPU's error (its message and its type) if an index was out of bounds.
  void raise_if_found(const ScatterGatherShape& shape) const {
    TORCH_CHECK(!found_.load(std::memory_order_relaxed), "index ", value_, " is out of bounds for dimension ",
                shape.dim, " with size ", shape.extent);
  }

 private:
  std::atomic<bool> found_{false};
  int64_t value_ = 0;
};

bool outside(int64_t index, int64_t extent) { return static_cast<uint64_t>(index) >= static_cast<uint64_t>(extent); }

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

template <class Element>
void gather_of(const Element* source, const int64_t* index, Element* result, const ScatterGatherShape& shape) {
  OutOfBounds out_of_bounds;
  for_each_column_run(shape, [&](int64_t o, int64_t first, int64_t last) {
    const Element* slice = source + o * shape.extent * shape.inner;
    for (int64_t r = 0; r < shape.rows; ++r) {
      const int64_t row = (o * shape.rows + r) * shape.inner;
      const int64_t* row_index = index + row;
      Element* row_result = result + row;
      for (int64_t n = first; n < last; ++n) {
        const int64_t k = row_index[n];
        if (outside(k, shape.extent)) {
          out_of_bounds.report(k);
          continue;
        }
        row_result[n] = slice[k * shape.inner + n];
      }
    }
  });
  out_of_bounds.raise_if_found(shape);
}

template <class Element>
void scatter_add_of(Element* destination, const int64_t* index, const Element* source,
                    const ScatterGatherShape& shape) {
  OutOfBounds out_of_bounds;
  const int64_t count = shape.outer * shape.rows * shape.inner;
  at::parallel_for(0, count, int64_t{1} << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      if (outside(index[i], shape.extent)) out_of_bounds.report(index[i]);
    }
  });
  out_of_bounds.raise_if_found(shape);
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
