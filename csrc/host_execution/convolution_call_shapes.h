// The result shapes and layout of a convolution call, cached by the call's
// metadata.
//
// Before it launches, axon's convolution runs PyTorch's meta convolution
// (validating the call, raising the CPU's errors at the call) and asks the
// CPU's backend choice which layout its results take. Together that is about
// 20 microseconds on the calling thread, which on a small host takes them
// from the device's own threads while it computes: a 3x3 convolution of
// 32x32x16x16 floats ran 5-15% slower on axon than on the CPU. Both depend
// only on sizes, strides, dtypes, the non-tensor arguments and three global
// switches (oneDNN, NNPACK, deterministic algorithms), so a call whose
// metadata was seen before reuses them.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/MemoryFormat.h>

#include <array>
#include <functional>
#include <memory>
#include <vector>

namespace axon {

struct ConvolutionCallShapes {
  std::array<at::Tensor, 3> results;                         // meta tensors (undefined where the call gives none)
  c10::MemoryFormat format = c10::MemoryFormat::Contiguous;  // of the 4-d and 5-d results
  // Whether the call runs with the worker's OpenMP team whatever its bytes
  // (convolution_wants_team, convolution.cpp).
  bool team = false;
};

// Describes a call for the cache: each argument appended in order.
class ConvolutionCallKey {
 public:
  explicit ConvolutionCallKey(int64_t operator_tag);
  ConvolutionCallKey& tensor(const at::Tensor& tensor);  // undefined tensors allowed
  ConvolutionCallKey& integers(c10::IntArrayRef values);
  ConvolutionCallKey& integer(int64_t value);
  const std::vector<int64_t>& words() const { return words_; }

 private:
  std::vector<int64_t> words_;
};

// The shapes for `key`, from `compute` the first time (its exceptions reach
// the caller and nothing is cached). The cache holds at most a few thousand
// calls: when full it starts over.
std::shared_ptr<const ConvolutionCallShapes> convolution_call_shapes(
    const ConvolutionCallKey& key, const std::function<ConvolutionCallShapes()>& compute);

// How many calls `compute` answered so far; for tests.
int64_t convolution_shape_computations();

}  // namespace axon
