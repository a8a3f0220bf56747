#include "host_execution/results_in_place.h"

#include <c10/core/CPUAllocator.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

namespace axon {
namespace {

// How many allocations of a result's size a call site's kernel is
// remembered to make before the one it returns (results_in_place.h).
constexpr std::size_t kRememberedAllocations = 4;
constexpr std::size_t kRememberedResults = 8;
using AllocationsBefore = std::array<int8_t, kRememberedResults>;

// One destination's memory, offered to an allocation of its exact size: the
// next one, or for a size no other destination has, the `skip`+1-th.
struct Offer {
  void* data = nullptr;
  std::size_t bytes = 0;
  bool taken = false;
  bool unique_size = false;
  int skip = 0;
  // Allocations of a unique size so far, and where the first ones went.
  int seen = 0;
  std::array<const void*, kRememberedAllocations> seen_data{};
};

// The offers of the kernel running on this thread; null outside one.
thread_local std::vector<Offer>* current_offers = nullptr;

// Destination memory handed out and not yet let go, on any thread. Why
// process-wide: a buffer taken through PyTorch's raw interface (oneDNN's
// buffers are) is freed through raw_deleter, possibly after the kernel or on
// another thread; it must never reach free(), which would free device memory.
std::mutex handed_out_mutex;
std::unordered_set<void*>& handed_out() {
  static auto* pointers = new std::unordered_set<void*>();  // outlives static destruction
  return *pointers;
}

// Forgets `pointer` if it is handed-out destination memory; true if it was.
bool take_back(void* pointer) {
  const std::lock_guard<std::mutex> lock(handed_out_mutex);
  return handed_out().erase(pointer) > 0;
}

void release_placed(void* pointer) { take_back(pointer); }

// PyTorch's CPU allocator, with the offers of the running kernel in front.
class PlacingAllocator final : public c10::Allocator {
 public:
  explicit PlacingAllocator(c10::Allocator* underlying) : underlying_(underlying) {
    underlying_raw_deleter_ = underlying->raw_deleter();
  }

  c10::DataPtr allocate(std::size_t bytes) override {
    if (current_offers != nullptr && bytes > 0) {
      for (Offer& offer : *current_offers) {
        if (offer.bytes != bytes) continue;
        if (offer.unique_size) {
          const int ordinal = offer.seen++;
          if (offer.taken || ordinal != offer.skip) {
            c10::DataPtr elsewhere = underlying_->allocate(bytes);
            if (ordinal < int(kRememberedAllocations)) offer.seen_data[ordinal] = elsewhere.get();
            return elsewhere;
          }
          if (ordinal < int(kRememberedAllocations)) offer.seen_data[ordinal] = offer.data;
        } else if (offer.taken) {
          continue;
        }
        offer.taken = true;
        {
          const std::lock_guard<std::mutex> lock(handed_out_mutex);
          handed_out().insert(offer.data);
        }
        // Context equals data, as PyTorch's raw interface expects; freed
        // either way (deleter or raw_deleter), the destination is left alone.
        return c10::DataPtr(offer.data, offer.data, &release_placed, c10::Device(c10::kCPU));
      }
    }
    return underlying_->allocate(bytes);
  }

  c10::DeleterFnPtr raw_deleter() const override { return underlying_raw_deleter_ != nullptr ? &release_raw : nullptr; }

  void copy_data(void* destination, const void* source, std::size_t count) const override {
    underlying_->copy_data(destination, source, count);
  }

  bool is_simple_data_ptr(const c10::DataPtr& data_ptr) const override {
    return underlying_->is_simple_data_ptr(data_ptr);
  }

 private:
  static void release_raw(void* pointer) {
    if (!take_back(pointer)) underlying_raw_deleter_(pointer);
  }

  c10::Allocator* underlying_;
  static inline c10::DeleterFnPtr underlying_raw_deleter_ = nullptr;
};

// The offer a destination makes: all its bytes, when it is dense with
// non-negative strides (then they start at its data pointer).
Offer offer_of(const at::Tensor& destination) {
  if (!destination.defined() || destination.numel() == 0 || !destination.is_non_overlapping_and_dense()) return {};
  for (const int64_t stride : destination.strides()) {
    if (stride < 0) return {};
  }
  return Offer{destination.data_ptr(), destination.nbytes()};
}

bool built_in_place(const at::Tensor& destination, const at::Tensor& result) {
  return result.defined() && result.const_data_ptr() == destination.const_data_ptr() &&
         result.sizes() == destination.sizes() && result.strides() == destination.strides() &&
         result.dtype() == destination.dtype() && result.is_conj() == destination.is_conj() &&
         result.is_neg() == destination.is_neg();
}

// Whether `result`'s bytes lie in memory some offer handed out.
bool in_offered_memory(const at::Tensor& result, const std::vector<Offer>& offers) {
  if (!result.defined() || !result.has_storage()) return false;
  const auto* begin = static_cast<const char*>(result.storage().data());
  for (const Offer& offer : offers) {
    const auto* offered = static_cast<const char*>(offer.data);
    if (offer.taken && begin >= offered && begin < offered + offer.bytes) return true;
  }
  return false;
}

// Sets the thread's offers for a scope, restoring the previous ones (a
// kernel calling another placed kernel keeps its own offers afterwards).
class OfferScope {
 public:
  explicit OfferScope(std::vector<Offer>* offers) : previous_(std::exchange(current_offers, offers)) {}
  ~OfferScope() { current_offers = previous_; }
  OfferScope(const OfferScope&) = delete;
  OfferScope& operator=(const OfferScope&) = delete;

 private:
  std::vector<Offer>* previous_;
};

std::atomic<int64_t> copied_results{0};

// What each call site learned (results_in_place.h); sites are operators' schemas, never freed.
std::mutex learned_mutex;
std::unordered_map<const void*, AllocationsBefore>& learned() {
  static auto* sites = new std::unordered_map<const void*, AllocationsBefore>();
  return *sites;
}

void prepare_offers(std::vector<Offer>& offers, const void* call_site) {
  if (call_site == nullptr) return;
  AllocationsBefore before{};
  {
    const std::lock_guard<std::mutex> lock(learned_mutex);
    const auto found = learned().find(call_site);
    if (found != learned().end()) before = found->second;
  }
  for (std::size_t i = 0; i < offers.size() && i < kRememberedResults; ++i) {
    if (offers[i].bytes == 0) continue;
    offers[i].unique_size = std::none_of(offers.begin(), offers.end(), [&](const Offer& other) {
      return &other != &offers[i] && other.bytes == offers[i].bytes;
    });
    if (offers[i].unique_size) offers[i].skip = before[i];
  }
}

// Which allocation of its size each misplaced result was, for the next call.
void learn_from(const std::vector<Offer>& offers, const std::vector<at::Tensor>& results,
                const std::vector<bool>& placed, const void* call_site) {
  if (call_site == nullptr) return;
  for (std::size_t i = 0; i < offers.size() && i < kRememberedResults; ++i) {
    if (placed[i] || !offers[i].unique_size || !results[i].defined() || !results[i].has_storage()) continue;
    const void* data = results[i].storage().data();
    for (int ordinal = 0; ordinal < std::min(offers[i].seen, int(kRememberedAllocations)); ++ordinal) {
      if (offers[i].seen_data[ordinal] != data) continue;
      const std::lock_guard<std::mutex> lock(learned_mutex);
      learned()[call_site][i] = int8_t(ordinal);
    }
  }
}

}  // namespace

void run_with_results_in_place(const std::vector<at::Tensor>& destinations,
                               const std::function<std::vector<at::Tensor>()>& kernel, const void* call_site) {
  std::vector<Offer> offers;
  offers.reserve(destinations.size());
  for (const at::Tensor& destination : destinations) offers.push_back(offer_of(destination));
  prepare_offers(offers, call_site);
  std::vector<at::Tensor> results;
  {
    const OfferScope scope(&offers);
    results = kernel();
  }
  TORCH_INTERNAL_ASSERT(results.size() == destinations.size(), "[axon] a placed kernel returned ", results.size(),
                        " results for ", destinations.size(), " destinations");
  // Take out of destination memory, before any copy writes there, every
  // result that is not exactly where it belongs.
  std::vector<bool> done(results.size(), false);
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (!destinations[i].defined() || !results[i].defined()) {
      done[i] = true;
    } else if (built_in_place(destinations[i], results[i])) {
      done[i] = true;
    } else if (in_offered_memory(results[i], offers)) {
      results[i] = results[i].clone(at::MemoryFormat::Preserve);
    }
  }
  learn_from(offers, results, done, call_site);
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (done[i]) continue;
    destinations[i].copy_(results[i]);
    copied_results.fetch_add(1, std::memory_order_relaxed);
  }
}

int64_t results_copied() { return copied_results.load(std::memory_order_relaxed); }

// Installed when the extension loads, above PyTorch's default CPU allocator
// (registered at priority 0), which it forwards to.
const bool placing_allocator_installed = [] {
  // Never destroyed: c10 keeps pointing at it through static destruction.
  c10::SetCPUAllocator(new PlacingAllocator(c10::GetCPUAllocator()), /*priority=*/1);
  return true;
}();

}  // namespace axon
