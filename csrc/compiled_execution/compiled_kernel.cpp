#include "compiled_execution/compiled_kernel.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/check.h"
#include "core/stream.h"
#include "host_execution/device_memory_views.h"
#include "ops/argument_tensors.h"
#include "profiler/device_activity.h"

namespace axon {
namespace {

// At most this many call shapes are remembered (compiled or declined); new
// shapes beyond it run on host kernels, so a loop over ever-new shapes keeps
// host memory and compile time bounded.
constexpr size_t kCallShapeLimit = 8192;
// Call shapes that differ only in floating values (an optimizer's step size
// changes every step) compile at most this many variants; further values
// run on host kernels rather than compiling once per value.
constexpr int kValueVariantLimit = 8;

// Tags of the call-shape key, one per kind of argument value.
enum Tag : int64_t {
  kNone = 1,
  kTensor,
  kUndefinedTensor,
  kInt,
  kDouble,
  kBool,
  kComplex,
  kList,
  kString,
  kDevice,
  kWrappedNumber
};

using CallShape = std::vector<int64_t>;

struct CallShapeHash {
  size_t operator()(const CallShape& key) const {
    uint64_t hash = 0xcbf29ce484222325ULL;
    for (int64_t word : key) hash = (hash ^ static_cast<uint64_t>(word)) * 0x100000001b3ULL;
    return static_cast<size_t>(hash);
  }
};

std::mutex cache_mutex;
std::unordered_map<CallShape, std::optional<LoweredKernel>, CallShapeHash> cache;  // guarded by cache_mutex
std::unordered_map<CallShape, int, CallShapeHash> value_variants;                  // guarded by cache_mutex
std::unordered_set<const c10::FunctionSchema*> declined_operators;                 // guarded by cache_mutex
KernelLowerer registered_lowerer;                                                  // guarded by cache_mutex

std::atomic<int> mode{-1};  // EagerKernels, or -1 until read from the environment
std::atomic<int64_t> launches{0}, lowered_shapes{0}, declined_shapes{0}, not_eligible{0}, cache_full{0},
    value_limited{0};
thread_local bool lowering_now = false;  // the lowerer's own tensor work runs on host kernels

int64_t bits_of(double value) {
  int64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

// Floating values are marked in the key so that call shapes differing only
// in them can be counted (value_variants).
constexpr int64_t kFloatingValueMark = -0x7a30f1;

void add_number(CallShape& key, const c10::Scalar& number) {
  if (number.isFloatingPoint()) {
    key.insert(key.end(), {kDouble, kFloatingValueMark, bits_of(number.toDouble())});
  } else if (number.isComplex()) {
    const c10::complex<double> value = number.toComplexDouble();
    key.insert(key.end(), {kComplex, kFloatingValueMark, bits_of(value.real()), bits_of(value.imag())});
  } else if (number.isBoolean()) {
    key.insert(key.end(), {kBool, number.toBool()});
  } else {
    key.insert(key.end(), {kInt, number.toLong()});
  }
}

// Whether a tensor's elements fill one memory range without gaps or
// overlaps, in any dimension order (a transpose of a contiguous tensor is):
// the lowerer binds that range and permutes it to the tensor's dimensions.
bool bindable(const at::Tensor& tensor, c10::Device device) {
  return tensor.device() == device && tensor.layout() == c10::kStrided && tensor.is_non_overlapping_and_dense() &&
         !tensor.is_conj() && !tensor.is_neg();
}

// Appends one tensor's part of the key, or returns false when the tensor
// cannot be a binding (not a dense tensor of `device`).
bool add_tensor(CallShape& key, std::vector<at::Tensor>& flat, const at::Tensor& tensor, c10::Device device) {
  if (!tensor.defined()) {
    key.push_back(kUndefinedTensor);
    return true;
  }
  if (tensor.is_cpu() && tensor.unsafeGetTensorImpl()->is_wrapped_number()) {
    // A Python number the operator took as a tensor (`x * 2`): its value is part of the call shape.
    key.push_back(kWrappedNumber);
    key.push_back(static_cast<int64_t>(tensor.scalar_type()));
    add_number(key, tensor.item());
    return true;
  }
  if (!bindable(tensor, device) || tensor.dtype() == at::kComplexHalf) return false;
  key.push_back(kTensor);
  key.push_back(static_cast<int64_t>(tensor.scalar_type()));
  key.push_back(tensor.dim());
  for (int64_t size : tensor.sizes()) key.push_back(size);
  for (int64_t stride : tensor.strides()) key.push_back(stride);
  flat.push_back(tensor);
  return true;
}

// Appends one argument's part of the key; false for values no compiled
// kernel takes (generators, storages, ...).
bool add_argument(CallShape& key, std::vector<at::Tensor>& flat, const c10::IValue& value, c10::Device device) {
  if (value.isTensor()) return add_tensor(key, flat, value.toTensor(), device);
  if (value.isNone()) {
    key.push_back(kNone);
  } else if (value.isInt()) {  // ints, and ScalarType / Layout / MemoryFormat
    key.insert(key.end(), {kInt, value.toInt()});
  } else if (value.isDouble() || value.isBool() || value.isComplexDouble()) {
    add_number(key, value.toScalar());
  } else if (value.isString()) {
    const std::string_view text = value.toStringView();
    key.insert(key.end(), {kString, static_cast<int64_t>(text.size())});
    for (char c : text) key.push_back(c);
  } else if (value.isDevice()) {
    key.insert(key.end(), {kDevice, static_cast<int64_t>(value.toDevice().type()), value.toDevice().index()});
  } else if (value.isList()) {
    const c10::List<c10::IValue> items = value.toList();
    key.insert(key.end(), {kList, static_cast<int64_t>(items.size())});
    for (const c10::IValue& item : items) {
      if (!add_argument(key, flat, item, device)) return false;
    }
  } else {
    return false;
  }
  return true;
}

// Whether the call's mutations are the one form a compiled kernel writes:
// an in-place operator (name ending in `_`) mutating `self` and returning it.
bool mutations_supported(const c10::OperatorHandle& op, const OperatorPlan& plan) {
  bool mutates = false;
  for (size_t i = 0; i < plan.argument_is_mutable.size(); ++i) {
    if (!plan.argument_is_mutable[i]) continue;
    if (i != 0) return false;
    mutates = true;
  }
  if (!mutates) {
    for (int aliased : plan.return_argument) {
      if (aliased >= 0) return false;
    }
    return true;
  }
  const std::string& name = op.schema().name();
  return !name.empty() && name.back() == '_' && plan.return_argument == std::vector<int>{0};
}

bool results_bindable(const std::vector<c10::IValue>& results, c10::Device device) {
  for (const c10::IValue& result : results) {
    if (!result.isTensor()) return false;
    if (!result.toTensor().defined() || !bindable(result.toTensor(), device)) return false;
  }
  return true;
}

bool enabled_for(c10::Device device) {
  switch (eager_kernels()) {
    case EagerKernels::kHost:
      return false;
    case EagerKernels::kCompiled:
      return true;
    case EagerKernels::kAutomatic:
      return !host_addressable(device.index());
  }
  return false;
}

// The key with the bits of each floating value dropped.
CallShape without_floating_values(const CallShape& key) {
  CallShape shape;
  shape.reserve(key.size());
  for (size_t i = 0; i < key.size(); ++i) {
    shape.push_back(key[i]);
    if (key[i] == kFloatingValueMark) i += (key[i - 1] == kComplex ? 2 : 1);
  }
  return shape;
}

// The kernel of this call shape: from the cache, or asked of the lowerer
// (outside the lock: it takes the GIL and compiles).
std::optional<LoweredKernel> kernel_for(CallShape&& key, const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args,
                                        const std::vector<c10::IValue>& results, c10::Device device) {
  KernelLowerer lowerer;
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    const auto found = cache.find(key);
    if (found != cache.end()) return found->second;
    if (!registered_lowerer) return std::nullopt;
    if (cache.size() >= kCallShapeLimit) {
      ++cache_full;
      return std::nullopt;
    }
    if (++value_variants[without_floating_values(key)] > kValueVariantLimit) {
      ++value_limited;
      return std::nullopt;
    }
    lowerer = registered_lowerer;
  }
  LoweringAnswer answer;
  lowering_now = true;
  try {
    answer = lowerer(op, args, results, device.index());
  } catch (...) {
    lowering_now = false;
    throw;
  }
  lowering_now = false;
  ++(answer.kernel.has_value() ? lowered_shapes : declined_shapes);
  std::lock_guard<std::mutex> lock(cache_mutex);
  if (answer.decline_operator) {
    declined_operators.insert(&op.schema());
  } else {
    cache.emplace(std::move(key), answer.kernel);
  }
  return answer.kernel;
}

}  // namespace

EagerKernels eager_kernels() {
  int current = mode.load(std::memory_order_relaxed);
  if (current < 0) {
    const char* value = std::getenv("AXON_EAGER_KERNELS");
    const std::string text = value == nullptr ? "" : value;
    current = static_cast<int>(text == "host"       ? EagerKernels::kHost
                               : text == "compiled" ? EagerKernels::kCompiled
                                                    : EagerKernels::kAutomatic);
    TORCH_CHECK(text.empty() || text == "host" || text == "compiled" || text == "auto",
                "[axon] AXON_EAGER_KERNELS must be host, compiled or auto, got '", text, "'");
    mode.store(current, std::memory_order_relaxed);
  }
  return static_cast<EagerKernels>(current);
}

void set_eager_kernels(EagerKernels value) { mode.store(static_cast<int>(value), std::memory_order_relaxed); }

void set_kernel_lowerer(KernelLowerer lowerer) {
  std::lock_guard<std::mutex> lock(cache_mutex);
  registered_lowerer = std::move(lowerer);
}

bool launch_compiled_kernel(const c10::OperatorHandle& op, const OperatorPlan& plan, c10::ArrayRef<c10::IValue> args,
                            const std::vector<c10::IValue>& results, c10::Device device) {
  if (lowering_now || !enabled_for(device)) return false;
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    if (declined_operators.count(&op.schema()) > 0) return false;
  }
  CallShape key;
  std::vector<at::Tensor> flat;
  key.reserve(32);
  key.push_back(reinterpret_cast<intptr_t>(&op.schema()));
  key.push_back(device.index());
  bool eligible = plan.generator_argument < 0 && mutations_supported(op, plan) && results_bindable(results, device);
  for (size_t i = 0; eligible && i < args.size(); ++i) eligible = add_argument(key, flat, args[i], device);
  // An in-place call whose other operands share self's storage: the host
  // kernel's overlap checks decide (they raise for partial overlap, as the CPU does).
  if (eligible && plan.argument_is_mutable.size() > 0 && plan.argument_is_mutable[0]) {
    const at::Tensor& self = results.front().toTensor();
    for (size_t i = 1; eligible && i < flat.size(); ++i) {
      eligible = !flat[i].storage().is_alias_of(self.storage());
    }
  }
  if (!eligible) {
    ++not_eligible;
    return false;
  }
  const std::optional<LoweredKernel> kernel = kernel_for(std::move(key), op, args, results, device);
  if (!kernel.has_value()) return false;

  std::vector<axon_binding> bindings;
  bindings.reserve(kernel->inputs.size() + results.size());
  for (int position : kernel->inputs) {
    const at::Tensor& tensor = flat.at(static_cast<size_t>(position));
    bindings.push_back(axon_binding{tensor.data_ptr(), tensor.nbytes()});
  }
  for (const c10::IValue& result : results) {
    const at::Tensor& tensor = result.toTensor();
    bindings.push_back(axon_binding{tensor.data_ptr(), tensor.nbytes()});
  }
  const ActivityLabelScope named([&] { return "compiled_kernel<" + op.schema().name() + ">"; });
  AXON_CHECK(axon_stream_launch_executable(current_stream_handle(device.index()), kernel->executable, "main",
                                           bindings.data(), bindings.size(), nullptr, 0),
             op.schema().name().c_str());
  ++launches;
  return true;
}

CompiledKernelStats compiled_kernel_stats() {
  return CompiledKernelStats{launches.load(),     lowered_shapes.load(), declined_shapes.load(),
                             not_eligible.load(), cache_full.load(),     value_limited.load()};
}

void reset_compiled_kernel_stats() {
  for (auto* counter : {&launches, &lowered_shapes, &declined_shapes, &not_eligible, &cache_full, &value_limited})
    counter->store(0);
}

}  // namespace axon
