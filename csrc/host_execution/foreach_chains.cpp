#include "host_execution/foreach_chains.h"

#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/ops/_foreach_add_native.h>
#include <ATen/ops/_foreach_addcdiv_native.h>
#include <ATen/ops/_foreach_addcmul_native.h>
#include <ATen/ops/_foreach_div_native.h>
#include <ATen/ops/_foreach_lerp_native.h>
#include <ATen/ops/_foreach_mul_native.h>
#include <ATen/ops/_foreach_sqrt_native.h>
#include <ATen/ops/_foreach_sub_native.h>
#include <ATen/ops/add.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/sqrt.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "compiled_execution/compiled_kernel.h"
#include "core/stream.h"
#include "host_execution/device_memory_views.h"
#include "host_execution/element_loop_proofs.h"
#include "host_execution/stream_launch.h"

namespace axon {
namespace {

std::atomic<int64_t> chains_started{0}, calls_joined{0}, rounds_in_element_loops{0};

// Elements of a tile: 128 KiB of float32 per tensor, so that the few tensors
// a chain's calls touch at one tile stay in a core's L2 cache between calls
// (16384 and 65536 measured the same). A multiple of every vector width.
constexpr int64_t kTileElements = 32768;

// Elements of a block: where every call of a round has an element loop
// (element_loops.h), each runs on a block of a tile before the next call
// does, so the block's few tensors stay in L1 (4 KiB of float32 each).
constexpr int64_t kBlockElements = 1024;

// Chains over fewer elements than this run on the worker's thread alone.
constexpr int64_t kParallelFromElements = int64_t{1} << 18;

// What one call does to one tile. `tiles` holds one view per operand list,
// the list the call writes first, then the call's number tensor if it has
// one (whole: a 0-dim tensor); `scalar` is the call's number for the tile's
// position.
using TileStep = void (*)(at::Tensor* tiles, const c10::Scalar& scalar, const c10::Scalar& alpha);

// A call's numbers: one for every position, or, from a ScalarList overload,
// one per position (and then exactly as many as positions).
struct Numbers {
  std::vector<c10::Scalar> values;
  bool per_position = false;
};
Numbers one(const c10::Scalar& value) { return {{value}, false}; }
Numbers none() { return one(0); }
Numbers each(c10::ArrayRef<c10::Scalar> values) { return {{values.begin(), values.end()}, true}; }

// What a call writes: its first list's tensors in place, or fresh results
// (made after chainable() has seen the inputs).
enum class Writes { kInPlace, kFreshResults };

// One _foreach_* call in a chain.
struct Call {
  TileStep step = nullptr;
  std::size_t lists = 0;
  bool number_tensor = false;        // a 0-dim tensor every position reads, aliased last
  std::vector<c10::Scalar> scalars;  // one for every position, or one per position
  c10::Scalar alpha;
  DeferredAliases aliases;  // every tensor of every list
  // [list * positions + position], then the number tensor: its index in aliases.make().
  std::vector<std::size_t> alias_of;
  // The loop proven to compute the call as `step` does (element_loop_proofs.h),
  // or nullptr; its numbers, converted to the element type as the CPU kernel
  // converts them; the element size.
  ElementLoop loop = nullptr;
  std::vector<double> loop_scalars;
  double loop_alpha = 0;
  std::size_t itemsize = 0;

  const c10::Scalar& scalar_at(std::size_t position) const {
    return scalars.size() == 1 ? scalars.front() : scalars[position];
  }
  double loop_scalar_at(std::size_t position) const {
    return loop_scalars.size() == 1 ? loop_scalars.front() : loop_scalars[position];
  }
};

// Device memory [begin, end) a chain's tensor covers, keyed by begin.
// A number tensor's extent has position kEveryPosition.
constexpr std::size_t kEveryPosition = SIZE_MAX;
struct Extent {
  uintptr_t end = 0;
  std::size_t position = 0;
  std::size_t itemsize = 0;
};
using Extents = std::map<uintptr_t, Extent>;

// Whether the extent starting at `begin` overlaps no extent of `extents` but
// its own exact copy (same bytes, position and element size).
bool fits(const Extents& extents, uintptr_t begin, const Extent& extent) {
  auto next = extents.upper_bound(begin);
  if (next != extents.begin()) {
    auto previous = std::prev(next);
    if (previous->second.end > begin) {
      // Only its own copy may overlap it; nothing after that copy can, since extents are disjoint.
      return previous->first == begin && previous->second.end == extent.end &&
             previous->second.position == extent.position && previous->second.itemsize == extent.itemsize;
    }
  }
  return next == extents.end() || next->first >= extent.end;
}

// Adds the extent starting at `begin` to `extents` if it fits; false if not.
bool add_extent(Extents& extents, uintptr_t begin, const Extent& extent) {
  if (!fits(extents, begin, extent)) return false;
  extents.emplace(begin, extent);  // leaves its exact copy, if there, as it was
  return true;
}

class Chain {
 public:
  // Set once, by the thread that starts the chain.
  c10::DeviceIndex device = 0;
  std::vector<int64_t> numels;  // per position
  // Under open_chains_mutex.
  Extents extents;
  uint64_t position_on_stream = 0;  // the stream's submission count right after its launch; 0 if unknown

  // Adds `call` unless the chain has finished.
  bool join(Call&& call) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finished_) return false;
    calls_.push_back(std::move(call));
    return true;
  }

  // On the worker. Runs the calls in rounds: those joined before it
  // started, then those that joined while it ran (on a device that was idle
  // when an optimizer step began, its first call starts at once and the
  // others join meanwhile), until a round finds none.
  // A round that throws (the dispatching thread's checks should leave none
  // that can) stops there; later rounds still run, as later kernels on a
  // stream run after a failed one, and the first failure is rethrown.
  void run() {
    std::exception_ptr failure;
    for (;;) {
      std::vector<Call> calls;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (calls_.empty()) {
          finished_ = true;
          break;
        }
        calls = std::move(calls_);
        calls_.clear();
      }
      try {
        run_round(calls);
      } catch (...) {
        if (!failure) failure = std::current_exception();
      }
    }
    if (failure) std::rethrow_exception(failure);
  }

 private:
  void run_round(const std::vector<Call>& calls) const {
    const std::size_t positions = numels.size();
    // Each call's tensors, flat, in the order alias_of numbers them.
    std::vector<std::vector<at::Tensor>> flat(calls.size());
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const c10::SmallVector<at::Tensor, 4> made = calls[i].aliases.make();
      flat[i].reserve(calls[i].alias_of.size());
      for (std::size_t index : calls[i].alias_of) flat[i].push_back(made[index]);
    }
    // Where every call has an element loop, the calls run block by block
    // over raw pointers: each tensor's first element here.
    const bool in_loops = std::all_of(calls.begin(), calls.end(), [](const Call& call) { return call.loop; });
    std::vector<std::vector<char*>> bases(in_loops ? calls.size() : 0);
    for (std::size_t i = 0; i < bases.size(); ++i) {
      for (const at::Tensor& tensor : flat[i]) bases[i].push_back(static_cast<char*>(tensor.data_ptr()));
    }
    if (in_loops) rounds_in_element_loops.fetch_add(1, std::memory_order_relaxed);
    // Tiles in order, each with the count of elements before it, so that
    // the threads can share them out by elements rather than by tiles
    // (positions differ in size by orders of magnitude).
    struct Tile {
      std::size_t position;
      int64_t first;
      int64_t elements_before;
    };
    std::vector<Tile> tiles;
    int64_t elements = 0;
    for (std::size_t position = 0; position < positions; ++position) {
      for (int64_t first = 0; first < numels[position]; first += kTileElements) {
        tiles.push_back({position, first, elements + first});
      }
      elements += numels[position];
    }
    // Runs the tiles that start within elements [begin, end).
    auto run_tiles = [&](int64_t begin, int64_t end) {
      auto tile = std::lower_bound(tiles.begin(), tiles.end(), begin,
                                   [](const Tile& t, int64_t element) { return t.elements_before < element; });
      std::array<at::Tensor, 4> views;
      for (; tile != tiles.end() && tile->elements_before < end; ++tile) {
        const int64_t length = std::min(kTileElements, numels[tile->position] - tile->first);
        if (in_loops) {
          run_blocks(calls, bases, tile->position, tile->first, length);
          continue;
        }
        for (std::size_t i = 0; i < calls.size(); ++i) {
          const Call& call = calls[i];
          for (std::size_t list = 0; list < call.lists; ++list) {
            views[list] = tile_of(flat[i][list * positions + tile->position], tile->first, length);
          }
          if (call.number_tensor) views[call.lists] = flat[i].back();
          call.step(views.data(), call.scalar_at(tile->position), call.alpha);
        }
      }
    };
    if (elements < kParallelFromElements) {
      run_tiles(0, elements);
    } else {
      at::parallel_for(0, elements, kTileElements, run_tiles);
    }
  }

  // Runs every call's element loop on elements [first, first + length) at
  // `position`, a block at a time.
  void run_blocks(const std::vector<Call>& calls, const std::vector<std::vector<char*>>& bases, std::size_t position,
                  int64_t first, int64_t length) const {
    const std::size_t positions = numels.size();
    for (int64_t done = 0; done < length; done += kBlockElements) {
      const int64_t n = std::min(kBlockElements, length - done);
      const auto element = static_cast<std::ptrdiff_t>(first + done);
      for (std::size_t i = 0; i < calls.size(); ++i) {
        const Call& call = calls[i];
        std::array<char*, 4> operands{};
        const std::ptrdiff_t offset = element * static_cast<std::ptrdiff_t>(call.itemsize);
        for (std::size_t list = 0; list < call.lists; ++list) {
          operands[list] = bases[i][list * positions + position] + offset;
        }
        if (call.number_tensor) operands[call.lists] = bases[i].back();
        call.loop(operands.data(), n, call.loop_scalar_at(position), call.loop_alpha);
      }
    }
  }

  // Elements [first, first + length) of a contiguous host alias, as a 1-D tensor.
  static at::Tensor tile_of(const at::Tensor& alias, int64_t first, int64_t length) {
    auto impl = c10::make_intrusive<c10::TensorImpl>(c10::Storage(alias.storage()), alias.key_set(), alias.dtype());
    const int64_t size[] = {length};
    const int64_t stride[] = {1};
    impl->set_sizes_and_strides(size, stride, alias.storage_offset() + first);
    return at::Tensor(std::move(impl));
  }

  std::mutex mutex_;
  bool finished_ = false;
  std::vector<Call> calls_;  // joined, not yet run
};

// The chain each stream last started (few streams: a short list).
std::mutex open_chains_mutex;
std::vector<std::pair<axon_stream, std::shared_ptr<Chain>>>& open_chains() {
  static auto* chains = new std::vector<std::pair<axon_stream, std::shared_ptr<Chain>>>();
  return *chains;
}

bool chainable_dtype(at::ScalarType dtype) {
  return dtype == at::kFloat || dtype == at::kDouble || dtype == at::kHalf || dtype == at::kBFloat16;
}

// A real number that `dtype` represents without overflow. The CPU kernels
// convert alpha to the tensors' dtype and the other numbers to the dtype
// they compute in, each conversion failing on overflow; numbers that pass
// here cannot fail on the worker, and the rest take the per-tensor loop, which
// raises at the call where the CPU does.
bool chainable_number(const c10::Scalar& number, at::ScalarType dtype) {
  if (number.isSymbolic() || !(number.isFloatingPoint() || number.isIntegral(/*includeBool=*/false))) return false;
  try {
    switch (dtype) {
      case at::kHalf:
        (void)number.to<c10::Half>();
        break;
      case at::kBFloat16:
        (void)number.to<c10::BFloat16>();
        break;
      case at::kFloat:
        (void)number.to<float>();
        break;
      default:
        (void)number.to<double>();
    }
  } catch (const std::exception&) {  // c10's overflow report is a std::runtime_error
    return false;
  }
  return true;
}

// Whether chains can run a call over `lists` (the written list first) with
// `numbers`: the conditions of foreach_chains.h, plus one dtype for every
// tensor (so no promotion can differ between a tensor and its 1-D tiles, and
// no dtype pairing the CPU refuses at the call gets queued) and, where the
// call writes in place, tensors that may be written here (not inference
// tensors outside inference mode).
bool chainable(const std::vector<at::TensorList>& lists, const Numbers& numbers, const c10::Scalar& alpha,
               const at::Tensor& number, Writes writes) {
  const std::size_t positions = lists.front().size();
  if (positions == 0 || numbers.values.size() != (numbers.per_position ? positions : 1)) return false;
  const at::Tensor& first = lists.front().front();
  if (!first.defined() || !first.is_privateuseone()) return false;
  const c10::Device device = first.device();
  const at::ScalarType dtype = first.scalar_type();
  if (!chainable_dtype(dtype) || !host_addressable(device.index()) || compiled_kernels_first(device)) return false;
  if (!chainable_number(alpha, dtype)) return false;
  const at::ScalarType computed_in = at::toOpMathType(dtype);
  for (const c10::Scalar& value : numbers.values) {
    if (!chainable_number(value, computed_in)) return false;
  }
  if (number.defined() &&
      (number.device() != device || number.dim() != 0 || number.scalar_type() != dtype || number.is_neg())) {
    return false;
  }
  const bool inference_mode = c10::InferenceMode::is_enabled();
  for (std::size_t list = 0; list < lists.size(); ++list) {
    if (lists[list].size() != positions) return false;
    for (std::size_t position = 0; position < positions; ++position) {
      const at::Tensor& tensor = lists[list][position];
      if (!tensor.defined() || tensor.device() != device || tensor.scalar_type() != dtype || !tensor.is_contiguous() ||
          tensor.is_neg() || tensor.sizes() != lists.front()[position].sizes()) {
        return false;
      }
      if (list == 0 && writes == Writes::kInPlace && tensor.is_inference() && !inference_mode) return false;
    }
  }
  return true;
}

// How many items `stream` has had queued, or 0 where the driver cannot tell
// (one built before axon_stream_get_submission_count): then no chain is
// ever joined, since a count read after a launch is never 0.
uint64_t submission_count(axon_stream stream) {
  uint64_t count = 0;
  return axon_stream_get_submission_count(stream, &count) == AXON_SUCCESS ? count : 0;
}

// Queues the call `step` over `lists` (checked by chainable) on the current
// stream, joining the stream's open chain where foreach_chains.h allows;
// false, queuing nothing, if the call's own tensors overlap.
bool queue_call(const std::vector<at::TensorList>& lists, TileStep step, ElementOp op, std::vector<c10::Scalar> scalars,
                const c10::Scalar& alpha, const at::Tensor& number) {
  const std::size_t positions = lists.front().size();
  const at::Tensor& first = lists.front().front();
  const c10::DeviceIndex device = first.device().index();
  Call call;
  call.step = step;
  const at::ScalarType dtype = first.scalar_type();
  call.loop = proven_element_loop(op, dtype);
  if (call.loop) {
    for (const c10::Scalar& value : scalars) call.loop_scalars.push_back(element_loop_number(value, dtype));
    call.loop_alpha = element_loop_alpha(op, alpha, dtype);
  }
  call.itemsize = first.itemsize();
  call.lists = lists.size();
  call.scalars = std::move(scalars);
  call.alpha = alpha;
  call.alias_of.reserve(lists.size() * positions);
  std::vector<int64_t> numels(positions);
  Extents extents;
  bool disjoint = true;
  // Aliases `tensor` for the worker and adds its memory, at `position`, to the call's extents.
  // The first list is the written one (in place, or the fresh results).
  auto add_operand = [&](const at::Tensor& tensor, std::size_t position, Access access) {
    call.alias_of.push_back(call.aliases.add(tensor, access));
    if (tensor.numel() == 0) return;
    const auto begin = reinterpret_cast<uintptr_t>(tensor.const_data_ptr());
    const Extent extent{begin + static_cast<uintptr_t>(tensor.nbytes()), position, tensor.itemsize()};
    disjoint = disjoint && add_extent(extents, begin, extent);
  };
  for (std::size_t list = 0; list < lists.size(); ++list) {
    for (std::size_t position = 0; position < positions; ++position) {
      add_operand(lists[list][position], position, list == 0 ? Access::write : Access::read);
      numels[position] = lists[list][position].numel();
    }
  }
  if (number.defined()) {
    call.number_tensor = true;
    add_operand(number, kEveryPosition, Access::read);
  }
  if (!disjoint) return false;

  const axon_stream stream = current_stream_handle(device);
  std::lock_guard<std::mutex> lock(open_chains_mutex);
  auto entry = std::find_if(open_chains().begin(), open_chains().end(),
                            [stream](const auto& open) { return open.first == stream; });
  const uint64_t submitted = submission_count(stream);
  if (entry != open_chains().end()) {
    Chain& chain = *entry->second;
    if (chain.position_on_stream != 0 && chain.position_on_stream == submitted && chain.device == device &&
        chain.numels == numels) {
      // The call's own extents are disjoint or exact copies of each other, so
      // checking each against the chain's alone is enough.
      const bool all_fit = std::all_of(extents.begin(), extents.end(), [&chain](const auto& entry) {
        return fits(chain.extents, entry.first, entry.second);
      });
      if (all_fit && chain.join(std::move(call))) {
        chain.extents.insert(extents.begin(), extents.end());
        calls_joined.fetch_add(1, std::memory_order_relaxed);
        return true;
      }
    }
  }
  auto chain = std::make_shared<Chain>();
  chain->device = device;
  chain->numels = std::move(numels);
  chain->extents = std::move(extents);
  chain->join(std::move(call));
  launch_on_stream(stream, "aten::_foreach_* (chain)", [chain] { chain->run(); });
  const uint64_t after = submission_count(stream);
  // Only if the launch alone was queued meanwhile is `after` the chain's own position.
  chain->position_on_stream = after == submitted + 1 ? after : 0;
  chains_started.fetch_add(1, std::memory_order_relaxed);
  if (entry != open_chains().end()) {
    entry->second = std::move(chain);
  } else {
    open_chains().emplace_back(stream, std::move(chain));
  }
  return true;
}

// Runs an in-place call through chains if it can, else returns false (the
// caller then runs PyTorch's per-tensor loop). It bumps the written tensors'
// versions, as the loop's in-place operators would, so autograd still sees
// that they changed.
bool chained(const std::vector<at::TensorList>& lists, TileStep step, ElementOp op, Numbers numbers,
             const c10::Scalar& alpha = 1, const at::Tensor& number = {}) {
  if (!chainable(lists, numbers, alpha, number, Writes::kInPlace)) return false;
  c10::DeviceGuard guard(lists.front().front().device());
  if (!queue_call(lists, step, op, std::move(numbers.values), alpha, number)) return false;
  for (const at::Tensor& tensor : lists.front()) tensor.unsafeGetTensorImpl()->bump_version();
  return true;
}

// Runs an out-of-place call through chains if it can: `step` writes fresh
// contiguous results, of the first input list's sizes and dtype, from
// `inputs`. Nothing if chains cannot run it (the caller then runs the loop).
std::optional<std::vector<at::Tensor>> chained_results(std::vector<at::TensorList> inputs, TileStep step, ElementOp op,
                                                       const c10::Scalar& alpha = 1) {
  if (!chainable(inputs, none(), alpha, {}, Writes::kFreshResults)) return std::nullopt;
  c10::DeviceGuard guard(inputs.front().front().device());
  std::vector<at::Tensor> results;
  results.reserve(inputs.front().size());
  for (const at::Tensor& tensor : inputs.front()) results.push_back(at::empty(tensor.sizes(), tensor.options()));
  inputs.insert(inputs.begin(), results);
  if (!queue_call(inputs, step, op, none().values, alpha, {})) return std::nullopt;
  return results;
}

// ---- the steps: each call's CPU operator on one tile ----------------------

void add_scalar_step(at::Tensor* t, const c10::Scalar& s, const c10::Scalar&) { t[0].add_(s); }
void add_list_step(at::Tensor* t, const c10::Scalar&, const c10::Scalar& alpha) { t[0].add_(t[1], alpha); }
void add_list_out_step(at::Tensor* t, const c10::Scalar&, const c10::Scalar& alpha) {
  at::add_out(t[0], t[1], t[2], alpha);
}
void sub_list_step(at::Tensor* t, const c10::Scalar&, const c10::Scalar& alpha) { t[0].sub_(t[1], alpha); }
void mul_scalar_step(at::Tensor* t, const c10::Scalar& s, const c10::Scalar&) { t[0].mul_(s); }
// Also for a number tensor (t[1] then holds it whole), as div_list_step.
void mul_list_step(at::Tensor* t, const c10::Scalar&, const c10::Scalar&) { t[0].mul_(t[1]); }
void div_scalar_step(at::Tensor* t, const c10::Scalar& s, const c10::Scalar&) { t[0].div_(s); }
void div_list_step(at::Tensor* t, const c10::Scalar&, const c10::Scalar&) { t[0].div_(t[1]); }
void lerp_scalar_step(at::Tensor* t, const c10::Scalar& s, const c10::Scalar&) { t[0].lerp_(t[1], s); }
void addcmul_step(at::Tensor* t, const c10::Scalar& s, const c10::Scalar&) { t[0].addcmul_(t[1], t[2], s); }
void addcdiv_step(at::Tensor* t, const c10::Scalar& s, const c10::Scalar&) { t[0].addcdiv_(t[1], t[2], s); }
void sqrt_step(at::Tensor* t, const c10::Scalar&, const c10::Scalar&) { t[0].sqrt_(); }
void sqrt_out_step(at::Tensor* t, const c10::Scalar&, const c10::Scalar&) { at::sqrt_out(t[0], t[1]); }

// ---- the kernels ----------------------------------------------------------

void add_scalar_(at::TensorList self, const c10::Scalar& scalar) {
  if (!chained({self}, &add_scalar_step, ElementOp::kAddScalar, one(scalar)))
    at::native::foreach_tensor_add_scalar_kernel_slow_(self, scalar);
}
void add_scalarlist_(at::TensorList self, at::ArrayRef<c10::Scalar> scalars) {
  if (!chained({self}, &add_scalar_step, ElementOp::kAddScalar, each(scalars))) {
    at::native::foreach_tensor_add_scalarlist_kernel_slow_(self, scalars);
  }
}
void add_list_(at::TensorList self, at::TensorList other, const c10::Scalar& alpha) {
  if (!chained({self, other}, &add_list_step, ElementOp::kAddList, none(), alpha)) {
    at::native::foreach_tensor_add_list_kernel_slow_(self, other, alpha);
  }
}
std::vector<at::Tensor> add_list(at::TensorList self, at::TensorList other, const c10::Scalar& alpha) {
  std::optional<std::vector<at::Tensor>> results =
      chained_results({self, other}, &add_list_out_step, ElementOp::kAddListOut, alpha);
  return results ? *std::move(results) : at::native::foreach_tensor_add_list_kernel_slow(self, other, alpha);
}
void sub_list_(at::TensorList self, at::TensorList other, const c10::Scalar& alpha) {
  if (!chained({self, other}, &sub_list_step, ElementOp::kSubList, none(), alpha)) {
    at::native::foreach_tensor_sub_list_kernel_slow_(self, other, alpha);
  }
}
void mul_scalar_(at::TensorList self, const c10::Scalar& scalar) {
  if (!chained({self}, &mul_scalar_step, ElementOp::kMulScalar, one(scalar)))
    at::native::foreach_tensor_mul_scalar_kernel_slow_(self, scalar);
}
void mul_scalarlist_(at::TensorList self, at::ArrayRef<c10::Scalar> scalars) {
  if (!chained({self}, &mul_scalar_step, ElementOp::kMulScalar, each(scalars))) {
    at::native::foreach_tensor_mul_scalarlist_kernel_slow_(self, scalars);
  }
}
void mul_list_(at::TensorList self, at::TensorList other) {
  if (!chained({self, other}, &mul_list_step, ElementOp::kMulList, none())) {
    at::native::foreach_tensor_mul_list_kernel_slow_(self, other);
  }
}
void div_scalar_(at::TensorList self, const c10::Scalar& scalar) {
  if (!chained({self}, &div_scalar_step, ElementOp::kDivScalar, one(scalar)))
    at::native::foreach_tensor_div_scalar_kernel_slow_(self, scalar);
}
void div_scalarlist_(at::TensorList self, at::ArrayRef<c10::Scalar> scalars) {
  if (!chained({self}, &div_scalar_step, ElementOp::kDivScalar, each(scalars))) {
    at::native::foreach_tensor_div_scalarlist_kernel_slow_(self, scalars);
  }
}
void mul_tensor_(at::TensorList self, const at::Tensor& other) {
  if (!chained({self}, &mul_list_step, ElementOp::kMulNumber, none(), 1, other)) {
    at::native::foreach_tensor_mul_tensor_kernel_slow_(self, other);
  }
}
void div_tensor_(at::TensorList self, const at::Tensor& other) {
  if (!chained({self}, &div_list_step, ElementOp::kDivNumber, none(), 1, other)) {
    at::native::foreach_tensor_div_tensor_kernel_slow_(self, other);
  }
}
void div_list_(at::TensorList self, at::TensorList other) {
  if (!chained({self, other}, &div_list_step, ElementOp::kDivList, none())) {
    at::native::foreach_tensor_div_list_kernel_slow_(self, other);
  }
}
void lerp_scalar_(at::TensorList self, at::TensorList ends, const c10::Scalar& weight) {
  if (!chained({self, ends}, &lerp_scalar_step, ElementOp::kLerpScalar, one(weight))) {
    at::native::foreach_tensor_lerp_list_kernel_slow_(self, ends, weight);
  }
}
void addcmul_scalar_(at::TensorList self, at::TensorList tensor1, at::TensorList tensor2, const c10::Scalar& value) {
  if (!chained({self, tensor1, tensor2}, &addcmul_step, ElementOp::kAddcmul, one(value))) {
    at::native::foreach_tensor_addcmul_scalar_slow_(self, tensor1, tensor2, value);
  }
}
void addcmul_scalarlist_(at::TensorList self, at::TensorList tensor1, at::TensorList tensor2,
                         at::ArrayRef<c10::Scalar> scalars) {
  if (!chained({self, tensor1, tensor2}, &addcmul_step, ElementOp::kAddcmul, each(scalars))) {
    at::native::foreach_tensor_addcmul_scalarlist_slow_(self, tensor1, tensor2, scalars);
  }
}
void addcdiv_scalar_(at::TensorList self, at::TensorList tensor1, at::TensorList tensor2, const c10::Scalar& value) {
  if (!chained({self, tensor1, tensor2}, &addcdiv_step, ElementOp::kAddcdiv, one(value))) {
    at::native::foreach_tensor_addcdiv_scalar_slow_(self, tensor1, tensor2, value);
  }
}
void addcdiv_scalarlist_(at::TensorList self, at::TensorList tensor1, at::TensorList tensor2,
                         at::ArrayRef<c10::Scalar> scalars) {
  if (!chained({self, tensor1, tensor2}, &addcdiv_step, ElementOp::kAddcdiv, each(scalars))) {
    at::native::foreach_tensor_addcdiv_scalarlist_slow_(self, tensor1, tensor2, scalars);
  }
}
void sqrt_(at::TensorList self) {
  if (!chained({self}, &sqrt_step, ElementOp::kSqrt, none())) at::native::foreach_tensor_sqrt_slow_(self);
}
std::vector<at::Tensor> sqrt(at::TensorList self) {
  std::optional<std::vector<at::Tensor>> results = chained_results({self}, &sqrt_out_step, ElementOp::kSqrtOut);
  return results ? *std::move(results) : at::native::foreach_tensor_sqrt_slow(self);
}

}  // namespace

void register_foreach_kernels(torch::Library& library) {
  library.impl("_foreach_add_.Scalar", TORCH_FN(add_scalar_));
  library.impl("_foreach_add_.ScalarList", TORCH_FN(add_scalarlist_));
  library.impl("_foreach_add_.List", TORCH_FN(add_list_));
  library.impl("_foreach_add.List", TORCH_FN(add_list));
  library.impl("_foreach_sub_.List", TORCH_FN(sub_list_));
  library.impl("_foreach_mul_.Scalar", TORCH_FN(mul_scalar_));
  library.impl("_foreach_mul_.ScalarList", TORCH_FN(mul_scalarlist_));
  library.impl("_foreach_mul_.List", TORCH_FN(mul_list_));
  library.impl("_foreach_mul_.Tensor", TORCH_FN(mul_tensor_));
  library.impl("_foreach_div_.Tensor", TORCH_FN(div_tensor_));
  library.impl("_foreach_div_.Scalar", TORCH_FN(div_scalar_));
  library.impl("_foreach_div_.ScalarList", TORCH_FN(div_scalarlist_));
  library.impl("_foreach_div_.List", TORCH_FN(div_list_));
  library.impl("_foreach_lerp_.Scalar", TORCH_FN(lerp_scalar_));
  library.impl("_foreach_addcmul_.Scalar", TORCH_FN(addcmul_scalar_));
  library.impl("_foreach_addcmul_.ScalarList", TORCH_FN(addcmul_scalarlist_));
  library.impl("_foreach_addcdiv_.Scalar", TORCH_FN(addcdiv_scalar_));
  library.impl("_foreach_addcdiv_.ScalarList", TORCH_FN(addcdiv_scalarlist_));
  library.impl("_foreach_sqrt_", TORCH_FN(sqrt_));
  library.impl("_foreach_sqrt", TORCH_FN(sqrt));
}

int64_t foreach_chains_started() { return chains_started.load(std::memory_order_relaxed); }
int64_t foreach_calls_joined() { return calls_joined.load(std::memory_order_relaxed); }
int64_t foreach_rounds_in_element_loops() { return rounds_in_element_loops.load(std::memory_order_relaxed); }

}  // namespace axon
