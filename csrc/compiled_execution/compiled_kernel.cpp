#include "compiled_execution/compiled_kernel.h"

#include <ATen/ops/empty.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "axon/memory.h"
#include "core/check.h"
#include "core/stream.h"
#include "host_execution/device_memory_views.h"
#include "profiler/device_activity.h"

namespace axon {
namespace {

// At most this many call shapes are remembered (compiled or declined); new
// shapes beyond it run on host kernels, so a loop over ever-new shapes keeps
// host memory and compile time bounded.
constexpr size_t kCallShapeLimit = 8192;
// Call shapes that differ only in floating values the lowerer could not make
// operands compile at most this many variants; further values run on host
// kernels rather than compiling once per value.
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
// By full key: programs with the floating values as constants, and declines.
std::unordered_map<CallShape, std::optional<LoweredKernel>, CallShapeHash> cache;  // guarded by cache_mutex
// By value-free key: programs taking the floating values as operands.
std::unordered_map<CallShape, LoweredKernel, CallShapeHash> operand_cache;  // guarded by cache_mutex
std::unordered_map<CallShape, int, CallShapeHash> value_variants;           // guarded by cache_mutex
std::unordered_set<const c10::FunctionSchema*> declined_operators;          // guarded by cache_mutex
// Call shapes seen fewer times than eager_compile_after(), by the key their program would be kept under.
std::unordered_map<CallShape, int, CallShapeHash> sightings;  // guarded by cache_mutex
KernelLowerer registered_lowerer;                             // guarded by cache_mutex

std::atomic<int> mode{-1};  // EagerKernels, or -1 until read from the environment
std::atomic<int64_t> launches{0}, lowered_shapes{0}, declined_shapes{0}, not_eligible{0}, cache_full{0},
    value_limited{0}, deferred{0};
std::atomic<int> compile_after{-1};      // or -1 until read from the environment
thread_local bool lowering_now = false;  // the lowerer's own tensor work runs on host kernels

int64_t bits_of(double value) {
  int64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

// Finite and not 0 or ±1: a value a program taking it as an operand serves
// (decompositions may special-case the others, e.g. addmm's beta == 0).
bool generic_value(double value) { return std::isfinite(value) && value != 0.0 && value != 1.0 && value != -1.0; }

// One call, read for the cache: its key, its tensors in argument order (the
// bindings), and its floating values in argument order (the operands).
struct CallShapeReader {
  c10::Device device;
  CallShape key;
  std::vector<at::Tensor> tensors;
  std::vector<double> floats;
  std::vector<size_t> float_positions;  // where each floating value's bits are in `key`

  // The key with the bits of each floating value dropped.
  CallShape without_floating_values() const {
    CallShape shape;
    shape.reserve(key.size());
    size_t next = 0;
    for (size_t i = 0; i < key.size(); ++i) {
      if (next < float_positions.size() && float_positions[next] == i) {
        ++next;
      } else {
        shape.push_back(key[i]);
      }
    }
    return shape;
  }

  void add_number(const c10::Scalar& number) {
    if (number.isFloatingPoint()) {
      key.push_back(kDouble);
      float_positions.push_back(key.size());
      key.push_back(bits_of(number.toDouble()));
      floats.push_back(number.toDouble());
    } else if (number.isComplex()) {
      const c10::complex<double> value = number.toComplexDouble();
      key.insert(key.end(), {kComplex, bits_of(value.real()), bits_of(value.imag())});
    } else if (number.isBoolean()) {
      key.insert(key.end(), {kBool, number.toBool()});
    } else {
      key.insert(key.end(), {kInt, number.toLong()});
    }
  }

  // False when the tensor cannot be a binding (not a dense tensor of `device`).
  bool add_tensor(const at::Tensor& tensor) {
    if (!tensor.defined()) {
      key.push_back(kUndefinedTensor);
      return true;
    }
    if (tensor.is_cpu() && tensor.unsafeGetTensorImpl()->is_wrapped_number()) {
      // A Python number the operator took as a tensor (`x * 2`): a value of the call.
      key.insert(key.end(), {kWrappedNumber, static_cast<int64_t>(tensor.scalar_type())});
      add_number(tensor.item());
      return true;
    }
    if (!bindable(tensor, device) || tensor.dtype() == at::kComplexHalf) return false;
    key.insert(key.end(), {kTensor, static_cast<int64_t>(tensor.scalar_type()), tensor.dim()});
    for (int64_t size : tensor.sizes()) key.push_back(size);
    for (int64_t stride : tensor.strides()) key.push_back(stride);
    tensors.push_back(tensor);
    return true;
  }

  // False for values no compiled kernel takes (generators, storages, ...).
  bool add_argument(const c10::IValue& value) {
    if (value.isTensor()) return add_tensor(value.toTensor());
    if (value.isNone()) {
      key.push_back(kNone);
    } else if (value.isInt()) {  // ints, and ScalarType / Layout / MemoryFormat
      key.insert(key.end(), {kInt, value.toInt()});
    } else if (value.isDouble() || value.isBool() || value.isComplexDouble()) {
      add_number(value.toScalar());
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
        if (!add_argument(item)) return false;
      }
    } else {
      return false;
    }
    return true;
  }

  // Whether a program taking the floating values as operands may serve this call.
  bool operands_possible() const {
    if (floats.empty()) return false;
    for (double value : floats) {
      if (!generic_value(value)) return false;
    }
    return true;
  }

  // Whether a tensor's elements fill one memory range without gaps or
  // overlaps, in any dimension order (a transpose of a contiguous tensor
  // does): the lowerer binds that range and permutes it to the tensor's dimensions.
  static bool bindable(const at::Tensor& tensor, c10::Device device) {
    return tensor.device() == device && tensor.layout() == c10::kStrided && tensor.is_non_overlapping_and_dense() &&
           !tensor.is_conj() && !tensor.is_neg();
  }
};

// Whether the call's mutations are a form a compiled kernel writes: an
// in-place operator (name ending in `_`) mutating `self` and returning it, or
// out= arguments the operator returns (the program's results go there).
bool mutations_supported(const c10::OperatorHandle& op, const OperatorPlan& plan) {
  const auto& arguments = op.schema().arguments();
  std::vector<int> mutated;
  for (size_t i = 0; i < plan.argument_is_mutable.size(); ++i) {
    if (plan.argument_is_mutable[i]) mutated.push_back(static_cast<int>(i));
  }
  if (mutated.empty()) {
    for (int aliased : plan.return_argument) {
      if (aliased >= 0) return false;
    }
    return true;
  }
  if (mutated == std::vector<int>{0} && !arguments[0].is_out()) {
    const std::string& name = op.schema().name();
    return !name.empty() && name.back() == '_' && plan.return_argument == mutated;
  }
  for (int index : mutated) {
    if (!arguments[static_cast<size_t>(index)].is_out()) return false;
  }
  return plan.return_argument == mutated;
}

bool results_bindable(const std::vector<c10::IValue>& results, c10::Device device) {
  for (const c10::IValue& result : results) {
    if (!result.isTensor() || !result.toTensor().defined() || !CallShapeReader::bindable(result.toTensor(), device)) {
      return false;
    }
  }
  return true;
}

// How the call's operands share storage with what it writes.
enum class Sharing {
  kNone,
  kSameTensor,  // an operand is exactly a written tensor (a.add_(a), torch.mul(a, b, out=a)): the lowerer
                // decides (elementwise programs read before they write; others, like cat, the CPU refuses)
  kOverlap,     // anything else: host kernels, whose overlap checks raise where the CPU's do
};

Sharing sharing_with_results(const std::vector<at::Tensor>& tensors, const std::vector<c10::IValue>& results,
                             const OperatorPlan& plan) {
  Sharing found = Sharing::kNone;
  for (size_t r = 0; r < results.size(); ++r) {
    const int aliased = plan.return_argument[r];
    if (aliased < 0) continue;  // a fresh output
    const at::Tensor& written = results[r].toTensor();
    // The written tensor is itself one of the call's tensors (self, or the out argument): that one is not sharing.
    bool seen_itself = false;
    for (const at::Tensor& tensor : tensors) {
      if (!tensor.storage().is_alias_of(written.storage())) continue;
      const bool same = tensor.const_data_ptr() == written.const_data_ptr() && tensor.sizes() == written.sizes() &&
                        tensor.strides() == written.strides() && tensor.dtype() == written.dtype();
      if (!same) return Sharing::kOverlap;
      if (!seen_itself) {
        seen_itself = true;
      } else {
        found = Sharing::kSameTensor;
      }
    }
  }
  return found;
}

}  // namespace

bool compiled_kernels_first(c10::Device device) {
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

namespace {

// The kernel of this call: from the caches, or asked of the lowerer
// (outside the lock: it takes the GIL and compiles).
std::optional<LoweredKernel> kernel_for(CallShapeReader& call, const c10::OperatorHandle& op,
                                        c10::ArrayRef<c10::IValue> args, const std::vector<c10::IValue>& results) {
  const bool operands = call.operands_possible();
  CallShape value_free = call.floats.empty() ? CallShape() : call.without_floating_values();
  KernelLowerer lowerer;
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    if (operands) {
      const auto found = operand_cache.find(value_free);
      if (found != operand_cache.end()) return found->second;
    }
    const auto found = cache.find(call.key);
    if (found != cache.end()) return found->second;
    if (!registered_lowerer) return std::nullopt;
    if (cache.size() + operand_cache.size() >= kCallShapeLimit) {
      ++cache_full;
      return std::nullopt;
    }
    if (!call.floats.empty() && value_variants[value_free] >= kValueVariantLimit) {
      ++value_limited;
      return std::nullopt;
    }
    const int needed = eager_compile_after();
    if (needed > 1) {
      const CallShape& seen = operands ? value_free : call.key;
      if (sightings.size() >= kCallShapeLimit) sightings.clear();  // forget one-off shapes, in bulk
      if (++sightings[seen] < needed) {
        ++deferred;
        return std::nullopt;
      }
      sightings.erase(seen);
    }
    lowerer = registered_lowerer;
  }
  LoweringAnswer answer;
  lowering_now = true;
  try {
    answer = lowerer(op, args, results, call.device.index());
  } catch (...) {
    lowering_now = false;
    throw;
  }
  lowering_now = false;
  ++(answer.kernel.has_value() ? lowered_shapes : declined_shapes);
  std::lock_guard<std::mutex> lock(cache_mutex);
  if (answer.decline_operator) {
    declined_operators.insert(&op.schema());
  } else if (answer.kernel.has_value() && !answer.kernel->operand_dtypes.empty()) {
    TORCH_INTERNAL_ASSERT(operands && answer.kernel->operand_dtypes.size() == call.floats.size(),
                          "[axon] the eager-kernel lowerer made operands of values this call cannot pass");
    operand_cache.emplace(std::move(value_free), *answer.kernel);
  } else {
    if (!call.floats.empty()) ++value_variants[value_free];
    cache.emplace(call.key, answer.kernel);
  }
  return answer.kernel;
}

// A 0-d device tensor holding `value` as `dtype`, written in stream order
// (a copy from pageable memory: the driver takes the bytes before returning).
at::Tensor operand(double value, c10::ScalarType dtype, c10::Device device, axon_stream stream) {
  at::Tensor tensor = at::empty({}, at::TensorOptions().dtype(dtype).device(device));
  if (dtype == at::kFloat) {
    const float narrowed = static_cast<float>(value);
    AXON_CHECK(axon_memory_copy_async(tensor.data_ptr(), &narrowed, sizeof(narrowed), stream), "an operand");
  } else {
    TORCH_INTERNAL_ASSERT(dtype == at::kDouble, "[axon] operands are float32 or float64");
    AXON_CHECK(axon_memory_copy_async(tensor.data_ptr(), &value, sizeof(value), stream), "an operand");
  }
  return tensor;
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

int eager_compile_after() {
  int current = compile_after.load(std::memory_order_relaxed);
  if (current < 0) {
    const char* value = std::getenv("AXON_EAGER_COMPILE_AFTER");
    current = value == nullptr || *value == '\0' ? 2 : std::atoi(value);
    TORCH_CHECK(current >= 1, "[axon] AXON_EAGER_COMPILE_AFTER must be a count of at least 1, got '", value, "'");
    compile_after.store(current, std::memory_order_relaxed);
  }
  return current;
}

void set_eager_compile_after(int calls) {
  TORCH_CHECK(calls >= 1, "[axon] a call shape compiles after at least 1 call, got ", calls);
  compile_after.store(calls, std::memory_order_relaxed);
}

void set_kernel_lowerer(KernelLowerer lowerer) {
  std::lock_guard<std::mutex> lock(cache_mutex);
  registered_lowerer = std::move(lowerer);
}

bool launch_compiled_kernel(const c10::OperatorHandle& op, const OperatorPlan& plan, c10::ArrayRef<c10::IValue> args,
                            const std::vector<c10::IValue>& results, c10::Device device) {
  if (lowering_now || !compiled_kernels_first(device)) return false;
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    if (declined_operators.count(&op.schema()) > 0) return false;
  }
  CallShapeReader call{device, {}, {}, {}};
  call.key.reserve(32);
  call.key.insert(call.key.end(), {reinterpret_cast<intptr_t>(&op.schema()), device.index()});
  bool eligible = plan.generator_argument < 0 && mutations_supported(op, plan) && results_bindable(results, device);
  for (size_t i = 0; eligible && i < args.size(); ++i) eligible = call.add_argument(args[i]);
  const Sharing sharing = eligible ? sharing_with_results(call.tensors, results, plan) : Sharing::kOverlap;
  if (!eligible || sharing == Sharing::kOverlap) {
    ++not_eligible;
    return false;
  }
  call.key.push_back(sharing == Sharing::kSameTensor ? 1 : 0);
  const std::optional<LoweredKernel> kernel = kernel_for(call, op, args, results);
  if (!kernel.has_value()) return false;

  const axon_stream stream = current_stream_handle(device.index());
  std::vector<at::Tensor> operands;
  for (size_t i = 0; i < kernel->operand_dtypes.size(); ++i) {
    operands.push_back(operand(call.floats[i], kernel->operand_dtypes[i], device, stream));
  }
  std::vector<axon_binding> bindings;
  bindings.reserve(kernel->inputs.size() + results.size());
  for (int position : kernel->inputs) {
    const size_t index = static_cast<size_t>(position);
    const at::Tensor& tensor =
        index < call.tensors.size() ? call.tensors[index] : operands.at(index - call.tensors.size());
    bindings.push_back(axon_binding{tensor.data_ptr(), tensor.nbytes()});
  }
  for (const c10::IValue& result : results) {
    const at::Tensor& tensor = result.toTensor();
    bindings.push_back(axon_binding{tensor.data_ptr(), tensor.nbytes()});
  }
  at::Tensor check_table;
  if (kernel->checks) {
    check_table = at::empty({static_cast<int64_t>(kernel->checks->size()), 2},
                            at::TensorOptions().dtype(at::kLong).device(device));
    bindings.push_back(axon_binding{check_table.data_ptr(), check_table.nbytes()});
  }
  const ActivityLabelScope named([&] { return "compiled_kernel<" + op.schema().name() + ">"; });
  AXON_CHECK(
      axon_stream_launch_executable(stream, kernel->executable, "main", bindings.data(), bindings.size(), nullptr, 0),
      op.schema().name().c_str());
  // A failed check raises at the next synchronizing call, as a host kernel's own error does. The table's memory
  // goes back to the allocator at once: reused only by work queued after the report, on this stream.
  if (kernel->checks) report_checks_in_stream_order(check_table, kernel->checks);
  ++launches;
  return true;
}

CompiledKernelStats compiled_kernel_stats() {
  return CompiledKernelStats{launches.load(),   lowered_shapes.load(), declined_shapes.load(), not_eligible.load(),
                             cache_full.load(), value_limited.load(),  deferred.load()};
}

void reset_compiled_kernel_stats() {
  for (auto* counter :
       {&launches, &lowered_shapes, &declined_shapes, &not_eligible, &cache_full, &value_limited, &deferred}) {
    counter->store(0);
  }
}

}  // namespace axon
