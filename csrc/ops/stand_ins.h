// CPU stand-ins for a call's axon tensors: what the CPU kernel runs on when
// a call's first run at a new shape asks it for output layouts and for the
// errors it raises whatever the data (shape_inference.cpp, adopt_cpu_metadata).
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/function_schema.h>
#include <ATen/core/ivalue.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>

namespace axon {

enum class Fill {
  // Small varied values: 0.5, 0.75, ... 1.5 (floating and complex), 0, 1, 0,
  // ... (integral and bool), but zeros in integral arguments that index
  // (names_indices).
  kPattern,
  kZeros,
  kOnes,
};

// Stand-ins of this many bytes in all are large: their fills are tried
// zeros first (see fill_order).
constexpr size_t kLargeStandInBytes = size_t{64} << 20;

// Up to this many bytes, large stand-ins may take varied values first all
// the same (see fill_order).
constexpr size_t kLargestVariedFirstStandInBytes = size_t{512} << 20;

// The fills a call's stand-ins are tried with, in turn, until the CPU
// kernel accepts one. Varied values come first where the stand-ins are
// small: only results computed from them say whether an `.out` kernel
// computes what its functional kernel does. Large stand-ins take zeros
// first, which cost host memory only where the kernel writes (filled_with):
// a first call of index_fill_ or index_put_ on a 2 GiB tensor touches a few
// elements, and a varied fill would write all of it (and a CPU kernel run on
// it the same again) on the calling thread.
// `varied_first`: large stand-ins of up to kLargestVariedFirstStandInBytes
// take varied values first all the same. For a call whose `.out` kernel is
// checked against its functional one, a run on zeros cannot prove its layout
// class (shape_inference.h): when such a class comes back at another size,
// its varied run proves it, and later sizes skip the CPU run (a 64 MiB
// softmax at new sizes: 155 ms a call, then 13-18; the CPU's own 31). Only
// then: the first call of a class at a fixed size keeps the zeros' cost.
c10::ArrayRef<Fill> fill_order(size_t stand_in_bytes, bool varied_first);

// Same sizes, strides and dtype as the axon tensors they stand in for, and
// the same overlaps (arguments that share an axon storage share one stand-in
// storage, at the same relative offsets), so the CPU kernel makes exactly the
// checks it would make on the real call (in-place on an expanded tensor, out=
// overlapping an input, ...). Only the span the tensors reach is allocated,
// not the whole storage; a storage's stand-in is made when a tensor of it is
// first mapped.
class StandIns {
 public:
  // Measures the spans of `args` the stand-ins will cover; allocates nothing.
  StandIns(const c10::FunctionSchema& schema, c10::ArrayRef<c10::IValue> args, Fill fill);

  // Drops the stand-ins made so far (a refused try's); those made from here
  // on are filled with `fill`. The measured spans stay.
  void refill(Fill fill);

  // The stand-in of `tensor` (CPU tensors and undefined ones pass through).
  at::Tensor operator()(const at::Tensor& tensor);

  // Host bytes the stand-ins cover.
  size_t bytes() const;

 private:
  struct Span {
    int64_t begin = INT64_MAX;  // bytes into the axon storage
    int64_t end = 0;
    bool holds_indices = false;  // an index argument reaches it (names_indices)
    at::Tensor memory;           // the CPU elements standing in for [begin, end)
  };

  void measure(const at::Tensor& tensor, bool indices);

  Fill fill_;
  std::unordered_map<const c10::StorageImpl*, Span> spans_;
  std::unordered_map<const c10::TensorImpl*, at::Tensor> tensors_;
};

// `elements` elements of `options` (a CPU dtype) filled as `fill` says. Zeros
// of a megabyte or more are fresh anonymous pages: they read as zero and take
// host memory only where a kernel writes them.
at::Tensor filled_with(int64_t elements, const at::TensorOptions& options, Fill fill);

}  // namespace axon
