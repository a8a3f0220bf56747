#include "ops/shape_inference.h"

#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like_native.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>
#include <ATen/record_function.h>

#include <c10/util/Exception.h>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

#include "core/word_hash.h"
#include "host_execution/one_host_thread.h"
#include "host_execution/worker_warnings.h"
#include "ops/argument_tensors.h"
#include "ops/native_meta_kernels.h"
#include "ops/stand_ins.h"

namespace axon {

at::Tensor to_meta(const at::Tensor& tensor) {
  if (!tensor.defined() || !tensor.is_privateuseone()) {
    return tensor;
  }
  at::Tensor meta =
      at::empty_strided(tensor.sizes(), tensor.strides(), tensor.options().device(c10::kMeta).requires_grad(false));
  meta._set_conj(tensor.is_conj());
  meta._set_neg(tensor.is_neg());
  return meta;
}

namespace {

// ---- cache key ------------------------------------------------------------

// Whether `tensor` is a non-overlapping dense tensor expanded along some
// dimensions (stride 0): dropping those leaves strides that tile the storage
// without gaps, each the product of the sizes inside it.
bool is_broadcast_of_dense(const at::Tensor& tensor) {
  std::vector<std::pair<int64_t, int64_t>> kept;  // (stride, size) of the dimensions that move
  bool broadcast = false;
  for (int64_t dim = 0; dim < tensor.dim(); ++dim) {
    if (tensor.size(dim) < 2) continue;
    if (tensor.stride(dim) == 0) {
      broadcast = true;
    } else {
      kept.emplace_back(tensor.stride(dim), tensor.size(dim));
    }
  }
  if (!broadcast) return false;
  std::sort(kept.begin(), kept.end());
  int64_t expected = 1;
  for (const auto& [stride, size] : kept) {
    if (stride != expected) return false;
    expected *= size;
  }
  return true;
}

// Everything a meta kernel can see, flattened into integers. Building fails
// (returns false) for argument kinds we do not know how to describe, and
// those calls are simply not cached.
class KeyBuilder {
 public:
  // `sizes_free`: describe each tensor by its layout class instead of its
  // sizes and strides (see shape_inference.h).
  explicit KeyBuilder(const c10::OperatorHandle& op, bool sizes_free = false) : sizes_free_(sizes_free) {
    words_.reserve(64);  // a binary operator's key is about 30 words: one allocation, no regrowth
    words_.push_back(static_cast<int64_t>(reinterpret_cast<uintptr_t>(&op.schema())));
    // Global state that decides result dtypes (int / int -> default dtype).
    words_.push_back(static_cast<int64_t>(c10::typeMetaToScalarType(c10::get_default_dtype())));
    // Global state some CPU kernels check whatever the data: under
    // torch.use_deterministic_algorithms, put_ and others raise (or warn,
    // with warn_only) on the stand-ins. A call shape cached with the mode
    // off would skip that run and leave the error to the worker.
    const at::Context& context = at::globalContext();
    words_.push_back(static_cast<int64_t>(context.deterministicAlgorithms()) +
                     2 * static_cast<int64_t>(context.deterministicAlgorithmsWarnOnly()));
  }

  bool add(const c10::IValue& value) {
    if (value.isNone()) return word(0);
    if (value.isTensor()) return tensor(value.toTensor());
    if (value.isInt()) return word(2) && word(value.toInt());
    if (value.isDouble()) return word(3) && real(value.toDouble());
    if (value.isBool()) return word(4) && word(value.toBool());
    if (value.isComplexDouble()) {
      const auto number = value.toComplexDouble();
      return word(5) && real(number.real()) && real(number.imag());
    }
    if (value.isIntList()) {
      const auto list = value.toIntList();
      word(6) && word(static_cast<int64_t>(list.size()));
      for (const int64_t item : list) word(item);
      return true;
    }
    if (value.isDoubleList()) {
      const auto list = value.toDoubleList();
      word(7) && word(static_cast<int64_t>(list.size()));
      for (const double item : list) real(item);
      return true;
    }
    if (value.isBoolList()) {
      const auto list = value.toBoolList();
      word(8) && word(static_cast<int64_t>(list.size()));
      for (const bool item : list) word(item);
      return true;
    }
    if (value.isTensorList()) {
      const auto list = value.toTensorList();
      word(9) && word(static_cast<int64_t>(list.size()));
      for (const at::Tensor& item : list) tensor(item);
      return true;
    }
    if (value.isOptionalTensorList()) {
      const auto list = value.toOptionalTensorList();
      word(10) && word(static_cast<int64_t>(list.size()));
      for (const std::optional<at::Tensor>& item : list) {
        item.has_value() ? tensor(*item) : word(0);
      }
      return true;
    }
    if (value.isString()) {
      const auto& text = value.toStringRef();
      word(11) && word(static_cast<int64_t>(text.size()));
      for (const char character : text) word(character);
      return true;
    }
    if (value.isDevice()) {
      return word(12) && word(static_cast<int64_t>(value.toDevice().type())) && word(value.toDevice().index());
    }
    if (value.isGenerator()) return word(13);  // random state never affects shapes
    return false;
  }

  const std::vector<int64_t>& words() const { return words_; }

  // Appends a tag of the caller's own (a placeholder for a left-out value).
  bool word(int64_t value) {
    words_.push_back(value);
    return true;
  }

  // Whether every tensor seen so far holds floating-point or complex numbers.
  bool all_tensors_inexact() const { return all_tensors_inexact_; }

 private:
  bool real(double value) {
    int64_t bits = 0;
    std::memcpy(&bits, &value, sizeof(bits));
    return word(bits);
  }

  bool tensor(const at::Tensor& value) {
    if (!value.defined()) return word(0);
    all_tensors_inexact_ =
        all_tensors_inexact_ && (at::isFloatingType(value.scalar_type()) || at::isComplexType(value.scalar_type()));
    word(1);
    word(static_cast<int64_t>(value.scalar_type()));
    word(static_cast<int64_t>(value.device().type()));
    word(value.unsafeGetTensorImpl()->is_wrapped_number());
    word(value.is_conj() | (value.is_neg() << 1));
    word(value.dim());
    if (sizes_free_) return layout_class(value);
    for (const int64_t size : value.sizes()) word(size);
    for (const int64_t stride : value.strides()) word(stride);
    // Which earlier argument's storage it shares, and where in it: the CPU's
    // overlap checks (`x[1:].add_(x[:-1])`, out= overlapping an input) see
    // these, so calls that differ in them must not share a cached outcome.
    const c10::StorageImpl* storage = value.has_storage() ? value.storage().unsafeGetStorageImpl() : nullptr;
    const int64_t offset =
        value.has_storage() ? value.storage_offset() * static_cast<int64_t>(value.element_size()) : 0;
    const auto known =
        std::find_if(storages_.begin(), storages_.end(), [&](const auto& entry) { return entry.first == storage; });
    if (storage == nullptr || known == storages_.end()) {
      if (storage != nullptr) storages_.emplace_back(storage, offset);
      return word(-1);
    }
    return word(known - storages_.begin()) && word(offset - known->second);
  }

  // What decides a kernel's output layout besides the sizes themselves:
  // which dimensions are empty, single or many; the order of all strides and
  // which neighbours in that order are equal (kernels that pick a memory
  // format look at the strides of single dimensions too); the memory format
  // ATen suggests for it, loosely and exactly. Only non-overlapping dense
  // tensors and broadcasts of them (expanded: stride 0 where the size is 2
  // or more, as backward passes give) are described: there the strides
  // follow from the sizes, the order and which dimensions are broadcast. In a
  // sliced one, how the stride values compare with the sizes also decides
  // layouts. A tensor sharing storage with an earlier argument is described
  // only when it is the same view of it.
  bool layout_class(const at::Tensor& value) {
    if (!value.is_non_overlapping_and_dense()) {
      if (!is_broadcast_of_dense(value)) return false;
      word(-6);
      for (int64_t dim = 0; dim < value.dim(); ++dim) word(value.stride(dim) == 0 && value.size(dim) > 1);
    }
    const c10::StorageImpl* storage = value.has_storage() ? value.storage().unsafeGetStorageImpl() : nullptr;
    if (storage != nullptr) {
      for (size_t index = 0; index < layout_views_.size(); ++index) {
        const at::Tensor& earlier = layout_views_[index];
        if (earlier.storage().unsafeGetStorageImpl() != storage) continue;
        if (earlier.storage_offset() != value.storage_offset() || earlier.sizes() != value.sizes() ||
            earlier.strides() != value.strides() || earlier.scalar_type() != value.scalar_type()) {
          return false;
        }
        return word(-5) && word(static_cast<int64_t>(index));
      }
      layout_views_.push_back(value);
    }
    std::vector<int64_t> order(static_cast<size_t>(value.dim()));
    for (int64_t dim = 0; dim < value.dim(); ++dim) {
      order[static_cast<size_t>(dim)] = dim;
      const int64_t size = value.size(dim);
      word(size < 2 ? size : 2);
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return value.stride(a) > value.stride(b); });
    for (size_t position = 0; position < order.size(); ++position) {
      word(order[position]);
      if (position > 0) word(value.stride(order[position - 1]) == value.stride(order[position]));
    }
    if (value.dim() == 4 || value.dim() == 5) {
      word(static_cast<int64_t>(value.suggest_memory_format()));
      word(static_cast<int64_t>(value.suggest_memory_format(/*channels_last_strides_exact_match=*/true)));
    }
    const bool channels_last = value.dim() == 4 && value.is_contiguous(c10::MemoryFormat::ChannelsLast);
    const bool channels_last_3d = value.dim() == 5 && value.is_contiguous(c10::MemoryFormat::ChannelsLast3d);
    return word(value.is_contiguous() | (channels_last << 1) | (channels_last_3d << 2));
  }

  std::vector<int64_t> words_;
  std::vector<std::pair<const c10::StorageImpl*, int64_t>> storages_;  // first offset (bytes) each was seen at
  bool all_tensors_inexact_ = true;
  bool sizes_free_ = false;
  std::vector<at::Tensor> layout_views_;  // tensors with storage seen so far (sizes_free keys)
};

// Bounded: a program with unboundedly many call shapes just refills it.
constexpr size_t kMaxCachedOutcomes = 1 << 14;

std::mutex cache_mutex;
std::unordered_map<std::vector<int64_t>, std::shared_ptr<const MetaOutcome>, WordHash> cache;

at::Tensor meta_with_strides_of(const at::Tensor& result) {
  if (!result.defined()) return at::Tensor();
  return at::empty_strided(result.sizes(), result.strides(), result.options().device(c10::kMeta));
}

c10::IValue non_resizable_like(const c10::IValue& meta) {
  return map_tensors(meta, [](const at::Tensor& shape) {
    if (!shape.defined()) return at::Tensor();
    // ATen's empty_like called directly: through the dispatcher, a meta
    // tensor's zeros_like and empty_like run Python meta kernels once
    // torch._meta_registrations is imported.
    at::Tensor out = at::native::empty_like(shape, std::nullopt, std::nullopt, c10::Device(c10::kCPU), std::nullopt,
                                            c10::MemoryFormat::Preserve)
                         .zero_();
    out.unsafeGetTensorImpl()->unsafe_storage().unsafeGetStorageImpl()->set_resizable(false);
    return out;
  });
}

// Whether two CPU results of the same call agree (NaNs in the same places).
bool same_results(const c10::IValue& first, const c10::IValue& second) {
  std::vector<at::Tensor> firsts;
  std::vector<at::Tensor> seconds;
  for_each_tensor(first, [&](const at::Tensor& tensor) { firsts.push_back(tensor); });
  for_each_tensor(second, [&](const at::Tensor& tensor) { seconds.push_back(tensor); });
  if (firsts.size() != seconds.size()) return false;
  for (size_t i = 0; i < firsts.size(); ++i) {
    const at::Tensor& a = firsts[i];
    const at::Tensor& b = seconds[i];
    if (a.defined() != b.defined()) return false;
    if (!a.defined() || a.numel() == 0) continue;
    if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) return false;
    const bool inexact = at::isFloatingType(a.scalar_type()) || at::isComplexType(a.scalar_type());
    if (c10::isFloat8Type(a.scalar_type())) {
      // allclose has no float8 kernels (its multiplication refuses them).
      if (!at::allclose(a.to(at::kFloat), b.to(at::kFloat), 1e-3, 1e-5, /*equal_nan=*/true)) return false;
      continue;
    }
    // Equal bits first: one pass that allocates nothing, where allclose
    // makes several temporaries of the results' size (a 64 MiB first call
    // spent most of its time in their fresh pages). at::equal has no
    // complex32 kernel.
    if (a.scalar_type() != at::kComplexHalf && at::equal(a, b)) continue;
    if (!inexact || !at::allclose(a, b, 1e-3, 1e-5, /*equal_nan=*/true)) return false;
  }
  return true;
}

// Lazy conjugation and negation bits of every tensor in `values`.
std::vector<int> lazy_flags(c10::ArrayRef<c10::IValue> values) {
  std::vector<int> flags;
  for (const auto& value : values) {
    for_each_tensor(value, [&](const at::Tensor& tensor) {
      flags.push_back(tensor.defined() ? (tensor.is_conj() | (tensor.is_neg() << 1)) : 0);
    });
  }
  return flags;
}

// Whether a kernel flipped the lazy conjugation/negation bit of a tensor it
// wrote (linalg_lu_solve(left=False) leaves its output conjugated). Such a
// bit set on a host alias never reaches the axon tensor, so those calls must
// not write through aliases.
bool changes_lazy_flags(c10::ArrayRef<c10::IValue> values, const std::vector<int>& before) {
  return lazy_flags(values) != before;
}

// Whether the `.out` overload writes into exactly-sized outputs without
// resizing them, and computes what the functional kernel computes (some
// `.out` kernels mishandle strided inputs: native_batch_norm.out's
// statistics); if not, the call runs the functional kernel and copies.
void check_out_variant(const OperatorPlan& plan, const torch::jit::Stack& stand_ins,
                       const torch::jit::Stack& functional_results, MetaOutcome& outcome) {
  for (const auto& result : outcome.returns) {
    if (result.isTensor() && !result.toTensor().defined()) {
      outcome.avoid_out_variant = true;  // an `.out` overload cannot take "no output"
      return;
    }
  }
  torch::jit::Stack with_outputs(stand_ins.begin(), stand_ins.end());
  for (const auto& result : outcome.returns) with_outputs.push_back(non_resizable_like(result));
  const std::vector<int> plain_flags = lazy_flags(torch::jit::last(with_outputs, outcome.returns.size()));
  try {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    plan.out_operator->callBoxed(with_outputs);
  } catch (const std::exception&) {
    outcome.avoid_out_variant = true;
    return;
  }
  const size_t first_output = stand_ins.size();
  if (changes_lazy_flags(torch::jit::last(with_outputs, outcome.returns.size()), plain_flags)) {
    outcome.avoid_out_variant = true;
    return;
  }
  for (size_t i = 0; i < outcome.returns.size() && i < functional_results.size(); ++i) {
    if (!same_results(functional_results[i], with_outputs[first_output + i])) {
      outcome.avoid_out_variant = true;
      return;
    }
  }
}

// Swallows warnings: stand-in runs are an implementation detail, and their
// warnings (e.g. about resized outputs) are not about the user's call.
// How ATen's resize_output begins its warning about a resized out= tensor.
constexpr const char* kResizedOutputWarning = "An output with one or more elements was resized";

// Swallows the warnings of the CPU reference run, which are not about the
// user's call, noting whether the kernel gave ATen's warning about an out=
// tensor it resized (then a cached call resizing one gives it too).
struct QuietWarnings final : c10::WarningHandler {
  void process(const c10::Warning& warning) override {
    if (warning.msg().rfind(kResizedOutputWarning, 0) == 0) {
      resized_an_output = true;
    } else {
      others.push_back(warning);
    }
  }
  bool resized_an_output = false;
  std::vector<c10::Warning> others;  // of the run, other than the resized outputs'
};

// Host memory of large stand-ins goes back to the system at once: glibc
// keeps freed blocks of every new size in its heap (its mmap threshold
// grows with each large free), so a program with many distinct large shapes
// would otherwise grow without bound.
constexpr size_t kTrimAfterStandInBytes = size_t{1} << 20;

// The call's arguments on the CPU, with stand-ins filled with `fill`; a
// random operator gets a private CPU generator so the user's CPU random
// stream is not consumed.
torch::jit::Stack stand_in_arguments(const OperatorPlan& plan, c10::ArrayRef<c10::IValue> args, StandIns& stand_ins) {
  torch::jit::Stack stack;
  stack.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    stack.push_back(static_cast<int>(i) == plan.generator_argument
                        ? c10::IValue(at::detail::createCPUGenerator(0))
                        : retarget_device(map_tensors(args[i], std::ref(stand_ins)), c10::kCPU));
  }
  return stack;
}

bool runs_on_cpu(const c10::OperatorHandle& op, torch::jit::Stack& stack) {
  try {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    op.callBoxed(stack);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// What a profile shows while a call's output layout is worked out (a cache
// miss): one range under the call, not the meta and CPU operators run on
// stand-ins, which the user did not call and whose CPU time is not the op's.
class LayoutInferenceRange {
 public:
  LayoutInferenceRange() {
    if (range_.isActive()) range_.before("axon::infer_output_layout");
  }

 private:
  at::RecordFunction range_{at::RecordScope::USER_SCOPE};  // ends after `quiet_` is gone
  at::RecordFunctionGuard quiet_{false};
};

// Calls adopt_cpu_metadata has run so far (reference_runs(), for tests).
std::atomic<int64_t> reference_run_count{0};

// The CPU kernel is the reference, for checks and for output metadata: run
// it once on stand-ins of the call.
//  - If it refuses stand-ins filled with zeros and with ones alike, the call
//    is refused whatever the data (an unsupported dtype, an argument check
//    the meta kernel lacks): the call must run synchronously, so the CPU's
//    error is raised at the call, as the CPU and CUDA raise it. Errors that
//    depend on values (an index out of range) stay asynchronous.
//  - Otherwise adopt its output shapes, strides and dtypes (meta kernels
//    sometimes differ, e.g. column-major linalg results, or empty saved
//    statistics in eval-mode batch norm).
//  - For operators run through their `.out` overload, also check that
//    overload writes into exactly-sized outputs without resizing them (some
//    use the output as scratch space); if not, the call runs the functional
//    kernel and copies instead.
void adopt_cpu_metadata(const c10::OperatorHandle& op, const OperatorPlan& plan, c10::ArrayRef<c10::IValue> args,
                        MetaOutcome& outcome, bool varied_first, bool& varied) {
  reference_run_count.fetch_add(1, std::memory_order_relaxed);
  // On the calling thread alone: a team of OpenMP helpers started here would
  // slow every parallel kernel of the device's worker (one_host_thread.h).
  const OneHostThreadScope one_thread;
  QuietWarnings quiet;
  c10::WarningUtils::WarningHandlerGuard quiet_guard(&quiet);
  // The fills in fill_order's turn: varied values first for small
  // stand-ins (they let check_out_variant compare results), zeros first for
  // large ones (host memory only where the kernel writes) unless
  // `varied_first`.
  torch::jit::Stack stand_ins;
  torch::jit::Stack functional;
  bool accepted = false;
  varied = false;  // accepted on varied values (not only zeros or ones)
  bool flags_changed = false;
  StandIns memory(op.schema(), args, Fill::kPattern);
  const size_t stand_in_bytes = memory.bytes();
  for (const Fill fill : fill_order(stand_in_bytes, varied_first)) {
    memory.refill(fill);
    stand_ins = stand_in_arguments(plan, args, memory);
    functional = stand_ins;
    const std::vector<int> flags_before = lazy_flags(stand_ins);
    quiet.others.clear();  // the accepted run's warnings are the call's
    accepted = runs_on_cpu(op, functional);
    // An in-place or out= kernel that leaves its argument conjugated runs
    // synchronously on host copies, written back with the bits resolved.
    flags_changed = accepted && changes_lazy_flags(stand_ins, flags_before);
    if (accepted) {
      varied = fill == Fill::kPattern;
      break;
    }
  }
  outcome.warns_about_resized_outputs = quiet.resized_an_output;
  if (!accepted || flags_changed) {
    outcome.needs_data = true;
  } else {
    // Arguments a kernel resized (out=) take the layout the CPU gave them.
    for (size_t i = 0; i < plan.argument_is_mutable.size() && i < outcome.arguments_after.size(); ++i) {
      if (plan.argument_is_mutable[i]) outcome.arguments_after[i] = map_tensors(stand_ins[i], meta_with_strides_of);
    }
    for (size_t i = 0; i < outcome.returns.size() && i < functional.size(); ++i) {
      if (plan.return_argument[i] >= 0) continue;
      if (functional[i].isTensor() || functional[i].isTensorList()) {
        outcome.returns[i] = map_tensors(functional[i], meta_with_strides_of);
      }
    }
    // Results are compared only on varied values, where they mean something.
    if (plan.strategy == Strategy::kOutVariant) {
      check_out_variant(plan, stand_ins, varied ? functional : torch::jit::Stack(), outcome);
    }
    // Warnings the CPU kernel gives at the call (a uint8 mask's deprecation,
    // var_mean's degrees of freedom), and of those, the ones a second run
    // gives again: TORCH_WARN_ONCE warnings come once per process.
    if (!quiet.others.empty()) {
      outcome.cpu_warnings = quiet.others;
      QuietWarnings again;
      c10::WarningUtils::WarningHandlerGuard again_guard(&again);
      torch::jit::Stack second = stand_ins;
      if (runs_on_cpu(op, second)) outcome.cpu_repeated_warnings = std::move(again.others);
    }
  }
  stand_ins.clear();
  functional.clear();
  if (stand_in_bytes >= kTrimAfterStandInBytes) malloc_trim(0);
}

// Keeps the warnings given while it is installed.
struct RecordedWarnings final : c10::WarningHandler {
  void process(const c10::Warning& warning) override { warnings.push_back(warning); }
  std::vector<c10::Warning> warnings;
};

torch::jit::Stack meta_arguments(c10::ArrayRef<c10::IValue> args) {
  torch::jit::Stack stack;
  stack.reserve(args.size());
  for (const auto& arg : args) stack.push_back(retarget_device(map_tensors(arg, to_meta), c10::kMeta));
  return stack;
}

// Runs the meta kernel on `stack`, returning the warnings it gave.
std::vector<c10::Warning> call_meta(const c10::OperatorHandle& op, torch::jit::Stack& stack) {
  RecordedWarnings recorded;
  c10::WarningUtils::WarningHandlerGuard guard(&recorded);
  at::AutoDispatchBelowADInplaceOrView below_autograd;
  if (const c10::KernelFunction* native = native_meta_kernel(op)) {
    native->callBoxed(op, c10::DispatchKeySet(c10::DispatchKey::Meta), &stack);
  } else {
    op.callBoxed(stack);
  }
  return std::move(recorded.warnings);
}

// Of a first call's warnings, those a second identical call gives again
// (TORCH_WARN_ONCE warnings are given once per process, as on the CPU).
std::vector<c10::Warning> repeated_warnings(const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args) {
  torch::jit::Stack again = meta_arguments(args);
  std::vector<c10::Warning> warnings;
  try {
    warnings = call_meta(op, again);
  } catch (const std::exception&) {
    return {};
  }
  // The caller warns about resized outputs itself (see infer_outputs).
  warnings.erase(std::remove_if(warnings.begin(), warnings.end(),
                                [&](const c10::Warning& w) { return w.msg().rfind(kResizedOutputWarning, 0) == 0; }),
                 warnings.end());
  return warnings;
}

// Sizes, strides and dtypes of every tensor a meta run returned or left in
// its arguments, flattened into integers. `addressing_only`: leave out the
// strides of dimensions of size 0 or 1, which address no second element (the
// CPU and meta kernels may pick different ones there).
std::vector<int64_t> meta_signature(c10::ArrayRef<c10::IValue> returns, c10::ArrayRef<c10::IValue> arguments_after,
                                    bool addressing_only = false) {
  std::vector<int64_t> words;
  for (const auto values : {returns, arguments_after}) {
    words.push_back(-1);
    for (const auto& value : values) {
      for_each_tensor(value, [&](const at::Tensor& tensor) {
        words.push_back(tensor.defined() ? static_cast<int64_t>(tensor.scalar_type()) : -2);
        if (!tensor.defined()) return;
        words.push_back(tensor.dim());
        words.insert(words.end(), tensor.sizes().begin(), tensor.sizes().end());
        for (int64_t dim = 0; dim < tensor.dim(); ++dim) {
          words.push_back(addressing_only && tensor.size(dim) < 2 ? 0 : tensor.stride(dim));
        }
      });
    }
  }
  return words;
}

// A Scalar argument's floating-point value whose exact value the cache need
// not key on: finite and within float16's range, so converting it to the
// (floating or complex) dtype of the call cannot overflow, the one way such a
// value makes a CPU kernel refuse a call its meta kernel accepts. Values that
// change output shapes (arange's bounds) are caught by comparing meta runs.
bool is_free_scalar(const c10::Argument& argument, const c10::IValue& value) {
  if (argument.type()->kind() != c10::TypeKind::NumberType || !value.isDouble()) return false;
  const double number = value.toDouble();
  return std::isfinite(number) && std::abs(number) <= 65504.0;
}

// The key of a call with its free Scalar values left out, if it has any and
// every tensor it takes is floating-point or complex; else false.
bool build_value_free_key(const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args, KeyBuilder& key) {
  const auto& arguments = op.schema().arguments();
  bool any_free = false;
  key.word(-7);  // never equal to an exact key
  for (size_t i = 0; i < args.size(); ++i) {
    if (i < arguments.size() && is_free_scalar(arguments[i], args[i])) {
      any_free = true;
      key.word(3);
      continue;
    }
    if (!key.add(args[i])) return false;
  }
  return any_free && key.all_tensors_inexact();
}

// `varied_first`: see fill_order.
std::shared_ptr<const MetaOutcome> run_meta(const c10::OperatorHandle& op, const OperatorPlan& plan,
                                            c10::ArrayRef<c10::IValue> args, bool varied_first) {
  auto outcome = std::make_shared<MetaOutcome>();
  torch::jit::Stack stack = meta_arguments(args);
  outcome->arguments_after = stack;  // shares the meta tensors: sees resizes
  std::vector<c10::Warning> warnings;
  try {
    warnings = call_meta(op, stack);
  } catch (const std::exception&) {
    // The meta kernel is missing or cannot tell without the data (boolean
    // masks, nonzero): the caller asks the CPU kernel itself, which either
    // computes the result or raises the same error the CPU would.
    outcome->needs_data = true;
    outcome->arguments_after.clear();
    return outcome;
  }
  outcome->meta_signature = meta_signature(stack, outcome->arguments_after);
  // The meta kernel's own results, before the CPU's replace them.
  const std::vector<c10::IValue> meta_returns(stack.begin(), stack.end());
  const std::vector<c10::IValue> meta_arguments_after = outcome->arguments_after;
  outcome->returns = std::move(stack);
  bool varied = false;
  adopt_cpu_metadata(op, plan, args, *outcome, varied_first, varied);
  if (outcome->needs_data) {
    // The CPU kernel runs on the real data and gives its own warnings.
    outcome->arguments_after.clear();
    return outcome;
  }
  // The user sees this call's warnings (as from the CPU kernel); the outcome
  // keeps the ones the CPU would give again on every call. A meta kernel that
  // gives none may lack the CPU's: the CPU kernel's own are given then.
  const bool from_cpu = warnings.empty() && !outcome->cpu_warnings.empty();
  if (from_cpu) warnings = outcome->cpu_warnings;
  for (const auto& warning : warnings) {
    note_warning_given_at_call(warning);
    c10::warn(warning);
  }
  if (!warnings.empty()) {
    outcome->repeated_warnings = from_cpu ? outcome->cpu_repeated_warnings : repeated_warnings(op, args);
  }
  outcome->cpu_warnings.clear();
  outcome->cpu_repeated_warnings.clear();
  // Compared as addresses go: a CPU result whose single dimension has another
  // stride than the meta kernel's (attention's query length of 1) holds its
  // elements where the meta layout does. A run on zeros or ones proves
  // layouts too, except where the proof also stands for check_out_variant's
  // comparison of results, which only varied values make: a call whose
  // stand-ins are large (zeros first) is then not the last of its class to
  // pay a full computation on the calling thread (in place, out=).
  const bool proves_results = varied || plan.strategy != Strategy::kOutVariant;
  const bool layouts_agree = warnings.empty() && !outcome->avoid_out_variant &&
                             meta_signature(outcome->returns, outcome->arguments_after, /*addressing_only=*/true) ==
                                 meta_signature(meta_returns, meta_arguments_after, /*addressing_only=*/true);
  outcome->proves_meta_layouts = proves_results && layouts_agree;
  outcome->would_prove_on_varied_values = !proves_results && layouts_agree;
  return outcome;
}

// A proof (shape_inference.h) covers a layout class together with which
// dimensions of the results were empty or single: results are compared as
// addresses go, which says nothing about the stride a single dimension gets
// once it holds more (pixel_shuffle of channels-last input to one channel).
std::vector<int64_t> proof_key(const std::vector<int64_t>& layout_class, const MetaOutcome& outcome) {
  std::vector<int64_t> words = layout_class;
  for (const auto values :
       {c10::ArrayRef<c10::IValue>(outcome.returns), c10::ArrayRef<c10::IValue>(outcome.arguments_after)}) {
    words.push_back(-9);
    for (const auto& value : values) {
      for_each_tensor(value, [&](const at::Tensor& tensor) {
        words.push_back(tensor.defined() ? tensor.dim() : -2);
        if (!tensor.defined()) return;
        for (const int64_t size : tensor.sizes()) words.push_back(size < 2 ? size : 2);
      });
    }
  }
  return words;
}

// Layout classes some CPU run proved, and the proofs themselves (proof_key);
// classes whose run would have proved them on varied values
// (MetaOutcome::would_prove_on_varied_values).
std::mutex proven_mutex;
std::unordered_set<std::vector<int64_t>, WordHash> proven_layout_classes;
std::unordered_set<std::vector<int64_t>, WordHash> proofs;
std::unordered_set<std::vector<int64_t>, WordHash> classes_awaiting_varied_values;

// Whether `words` is in `set`, one of the sets under proven_mutex.
bool is_recorded(const std::vector<int64_t>& words, const std::unordered_set<std::vector<int64_t>, WordHash>& set) {
  std::lock_guard<std::mutex> lock(proven_mutex);
  return set.count(words) != 0;
}

void remember_proof(const std::vector<int64_t>& layout_class, const MetaOutcome& outcome) {
  std::vector<int64_t> proof = proof_key(layout_class, outcome);
  std::lock_guard<std::mutex> lock(proven_mutex);
  if (proofs.size() >= kMaxCachedOutcomes) {
    proofs.clear();
    proven_layout_classes.clear();
  }
  proven_layout_classes.insert(layout_class);
  proofs.insert(std::move(proof));
  classes_awaiting_varied_values.erase(layout_class);
}

void await_varied_values(const std::vector<int64_t>& layout_class) {
  std::lock_guard<std::mutex> lock(proven_mutex);
  if (classes_awaiting_varied_values.size() >= kMaxCachedOutcomes) classes_awaiting_varied_values.clear();
  classes_awaiting_varied_values.insert(layout_class);
}

// The outcome of a call of a proven layout class: its own meta run, trusted
// without the CPU's when a proof covers its results' shapes too. Null when
// none does, or the meta run fails or warns: the full path then runs (and
// gives the call's own error or warnings).
std::shared_ptr<const MetaOutcome> meta_alone(const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args,
                                              const std::vector<int64_t>& layout_class) {
  auto outcome = std::make_shared<MetaOutcome>();
  torch::jit::Stack stack = meta_arguments(args);
  outcome->arguments_after = stack;  // shares the meta tensors: sees resizes
  try {
    if (!call_meta(op, stack).empty()) return nullptr;
  } catch (const std::exception&) {
    return nullptr;
  }
  outcome->meta_signature = meta_signature(stack, outcome->arguments_after);
  outcome->returns = std::move(stack);
  if (!is_recorded(proof_key(layout_class, *outcome), proofs)) return nullptr;
  outcome->proves_meta_layouts = true;
  // A `.out` kernel that would lay its output out otherwise at these sizes
  // (the CPU's layout choice can turn on size values the class leaves out)
  // restrides the output alias and writes in its own layout: the functional
  // kernel's result, copied into the meta layout, is right whatever it chose.
  outcome->avoid_out_variant = true;
  return outcome;
}

bool build_key(const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args, KeyBuilder& key) {
  for (const auto& arg : args) {
    if (!key.add(arg)) return false;
  }
  return true;
}

}  // namespace

int64_t reference_runs() { return reference_run_count.load(std::memory_order_relaxed); }

std::shared_ptr<const MetaOutcome> infer_outputs(const c10::OperatorHandle& op, const OperatorPlan& plan,
                                                 c10::ArrayRef<c10::IValue> args, bool& from_cache) {
  from_cache = false;
  KeyBuilder key(op);
  const bool cacheable = build_key(op, args, key);
  const auto cached_outcome = [](const std::vector<int64_t>& words) {
    std::lock_guard<std::mutex> lock(cache_mutex);
    auto hit = cache.find(words);
    return hit != cache.end() ? hit->second : std::shared_ptr<const MetaOutcome>();
  };
  const auto answer_from_cache = [&](std::shared_ptr<const MetaOutcome> cached) {
    // Outside the lock: a warning handler may run Python.
    for (const auto& warning : cached->repeated_warnings) {
      note_warning_given_at_call(warning);
      c10::warn(warning);
    }
    from_cache = true;
    return cached;
  };
  if (cacheable) {
    if (auto cached = cached_outcome(key.words())) return answer_from_cache(std::move(cached));
  }
  // A call that differs from a cached one only in a Scalar's value (an
  // optimizer's bias-corrected step size changes every step) reuses its
  // outcome when its own meta run agrees, instead of running the CPU kernel
  // on full-size stand-ins again.
  const LayoutInferenceRange profiled_as_one_range;
  KeyBuilder value_free_key(op);
  const bool has_value_free_key = cacheable && build_value_free_key(op, args, value_free_key);
  if (has_value_free_key) {
    auto similar = cached_outcome(value_free_key.words());
    if (similar && !similar->needs_data) {
      torch::jit::Stack stack = meta_arguments(args);
      const torch::jit::Stack arguments_after = stack;  // shares the meta tensors: sees resizes
      bool agrees = false;
      try {
        call_meta(op, stack);
        agrees = meta_signature(stack, arguments_after) == similar->meta_signature;
      } catch (const std::exception&) {
        // The full path below raises or reports this call's own error.
      }
      if (agrees) return answer_from_cache(std::move(similar));
    }
  }
  // A call whose layout class a CPU run already proved: its meta run alone.
  KeyBuilder layout_class(op, /*sizes_free=*/true);
  const bool has_layout_class = cacheable && build_key(op, args, layout_class);
  std::shared_ptr<const MetaOutcome> outcome;
  if (has_layout_class && is_recorded(layout_class.words(), proven_layout_classes)) {
    outcome = meta_alone(op, args, layout_class.words());
  }
  if (!outcome) {
    // A class back at another size after a run on zeros: its varied run
    // proves it (fill_order says why only then).
    const bool varied_first = has_layout_class && is_recorded(layout_class.words(), classes_awaiting_varied_values);
    outcome = run_meta(op, plan, args, varied_first);
    if (has_layout_class && outcome->proves_meta_layouts) remember_proof(layout_class.words(), *outcome);
    if (has_layout_class && outcome->would_prove_on_varied_values) await_varied_values(layout_class.words());
  }
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex);
    if (cache.size() >= kMaxCachedOutcomes) cache.clear();
    cache.emplace(key.words(), outcome);
    if (has_value_free_key) cache[value_free_key.words()] = outcome;
  }
  return outcome;
}

}  // namespace axon
