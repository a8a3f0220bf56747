#include "host_execution/convolution_call_shapes.h"

#include <ATen/Context.h>

#include <atomic>
#include <mutex>
#include <unordered_map>

#include "core/word_hash.h"

namespace axon {
namespace {

constexpr size_t kMostCalls = 4096;

std::mutex cache_mutex;
std::unordered_map<std::vector<int64_t>, std::shared_ptr<const ConvolutionCallShapes>, WordHash> cache;
std::atomic<int64_t> computations{0};

}  // namespace

ConvolutionCallKey::ConvolutionCallKey(int64_t operator_tag) {
  words_.reserve(48);
  words_.push_back(operator_tag);
  // The switches the CPU's backend choice reads besides the arguments.
  words_.push_back(at::globalContext().userEnabledMkldnn());
  words_.push_back(at::globalContext().userEnabledNNPACK());
  words_.push_back(at::globalContext().deterministicAlgorithms());
}

ConvolutionCallKey& ConvolutionCallKey::tensor(const at::Tensor& tensor) {
  if (!tensor.defined()) return integer(-1);
  integer(static_cast<int64_t>(tensor.scalar_type()));
  integers(tensor.sizes());
  for (const int64_t stride : tensor.strides()) words_.push_back(stride);
  return *this;
}

ConvolutionCallKey& ConvolutionCallKey::integers(c10::IntArrayRef values) {
  words_.push_back(static_cast<int64_t>(values.size()));
  words_.insert(words_.end(), values.begin(), values.end());
  return *this;
}

ConvolutionCallKey& ConvolutionCallKey::integer(int64_t value) {
  words_.push_back(value);
  return *this;
}

std::shared_ptr<const ConvolutionCallShapes> convolution_call_shapes(
    const ConvolutionCallKey& key, const std::function<ConvolutionCallShapes()>& compute) {
  {
    const std::lock_guard<std::mutex> lock(cache_mutex);
    const auto found = cache.find(key.words());
    if (found != cache.end()) return found->second;
  }
  auto shapes = std::make_shared<const ConvolutionCallShapes>(compute());  // outside the lock: it may raise
  computations.fetch_add(1, std::memory_order_relaxed);
  const std::lock_guard<std::mutex> lock(cache_mutex);
  if (cache.size() >= kMostCalls) cache.clear();
  cache.emplace(key.words(), shapes);
  return shapes;
}

int64_t convolution_shape_computations() { return computations.load(std::memory_order_relaxed); }

}  // namespace axon
