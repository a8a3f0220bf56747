#include "core/device_allocator.h"

#include <algorithm>
#include <limits>
#include <mutex>
#include <new>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/copy_on_write.h"
#include "core/device.h"
#include "core/host_waits.h"
#include "core/memory_history.h"
#include "core/stream.h"

namespace axon {
namespace {

using c10::CachingAllocator::StatType;
using c10::CachingDeviceAllocator::DeviceStats;

constexpr size_t kRounding = 512;
// Blocks up to this size are the "small pool" in the statistics, as in CUDA.
constexpr size_t kSmallBlockLimit = 1 << 20;
// Requests above this size are rounded up to one of kSizeClassesPerOctave
// sizes between consecutive powers of two.
constexpr size_t kSizeClassesFrom = 8 << 10;
constexpr size_t kSizeClassesPerOctave = 4;

// Why size classes: blocks are never split, and a cached block serves only
// requests at most a quarter smaller. A tensor that grows a little every
// step (a KV cache that torch.cat extends by one token) asked for a size no
// freed block had: every step took a fresh segment, the old ones piled up in
// the cache unused, and past 1 MiB each fresh segment was freshly zeroed
// pages from the kernel (the arena gives large frees back). Within a class
// the freed block of the previous step serves the next one, and a growing
// tensor leaves behind one block per class, a few times its final size in
// all. Powers of two stay exact; no class wastes more than a quarter.
size_t exact_size(size_t bytes) { return (bytes + kRounding - 1) / kRounding * kRounding; }

size_t round_size(size_t bytes) {
  if (bytes <= kSizeClassesFrom) return exact_size(bytes);
  if (bytes > std::numeric_limits<size_t>::max() / 4) return bytes;  // beyond any device: the driver refuses it
  size_t octave = kSizeClassesFrom;
  while (octave < bytes / 2 + bytes % 2) octave *= 2;  // octave < bytes <= 2 * octave
  const size_t step = octave / kSizeClassesPerOctave;
  return (bytes + step - 1) / step * step;
}

// A block is one driver allocation (no splitting): its size is its segment.
struct Block {
  c10::DeviceIndex device;
  void* ptr;
  size_t size;
  size_t requested = 0;
  c10::StreamId stream_id;                        // the stream it was allocated on
  std::vector<c10::Stream> extra_users;           // record_stream() streams
  int pending_events = 0;                         // cross-stream uses still in flight
  std::function<void()> release_external;         // set for memory the allocator does not own
  std::shared_ptr<c10::GatheredContext> context;  // where it was allocated, while history is recorded
  // The driver's host view of `ptr` (axon_memory_host_view), asked once per
  // segment, or null where the host cannot address it (or for memory the
  // allocator does not own). Kernels read it instead of asking the driver
  // per operand and launch: that lookup was a tenth of a small kernel's
  // time on the device's worker.
  void* host_view = nullptr;
  // Links of LiveBlocks while handed out.
  bool live = false;
  Block* live_previous = nullptr;
  Block* live_next = nullptr;
};

// The blocks handed out and not yet freed, linked through the blocks
// themselves, so that inserting and erasing allocate nothing (a hash set's
// node allocation and free were a visible share of a tiny operator's time).
class LiveBlocks {
 public:
  void insert(Block* block) {
    if (block->live) return;
    block->live = true;
    block->live_previous = nullptr;
    block->live_next = head_;
    if (head_ != nullptr) head_->live_previous = block;
    head_ = block;
  }

  void erase(Block* block) {
    if (!block->live) return;
    block->live = false;
    (block->live_previous != nullptr ? block->live_previous->live_next : head_) = block->live_next;
    if (block->live_next != nullptr) block->live_next->live_previous = block->live_previous;
    block->live_previous = block->live_next = nullptr;
  }

  template <class Visit>
  void for_each(Visit visit) const {
    for (const Block* block = head_; block != nullptr; block = block->live_next) visit(block);
  }

 private:
  Block* head_ = nullptr;
};

std::uintptr_t address_of(const Block* block) { return reinterpret_cast<std::uintptr_t>(block->ptr); }

struct BlockOrder {
  bool operator()(const Block* a, const Block* b) const {
    return std::tie(a->stream_id, a->size, a->ptr) < std::tie(b->stream_id, b->size, b->ptr);
  }
};

// Nodes of a container kept for reuse instead of freed: the free-block set
// gains a node at every free and loses one at every allocation, and a
// malloc and free of that node were a visible share of a tiny operator's
// allocation. Used under the owning cache's mutex only.
class NodePool {
 public:
  NodePool() = default;
  NodePool(const NodePool&) = delete;
  NodePool& operator=(const NodePool&) = delete;
  ~NodePool() {
    while (free_ != nullptr) ::operator delete(std::exchange(free_, free_->next));
  }

  void* take(size_t bytes) {
    if (node_bytes_ == 0) node_bytes_ = bytes;
    if (bytes == node_bytes_ && free_ != nullptr) return std::exchange(free_, free_->next);
    return ::operator new(bytes);
  }

  void give_back(void* node, size_t bytes) {
    if (bytes != node_bytes_ || bytes < sizeof(FreeNode)) {
      ::operator delete(node);
      return;
    }
    free_ = new (node) FreeNode{free_};
  }

 private:
  struct FreeNode {
    FreeNode* next;
  };
  size_t node_bytes_ = 0;  // the size of the one kind of node pooled
  FreeNode* free_ = nullptr;
};

// A standard allocator drawing single nodes from a NodePool.
template <class T>
struct PooledNodes {
  using value_type = T;
  NodePool* pool;
  explicit PooledNodes(NodePool* nodes) : pool(nodes) {}
  template <class U>
  PooledNodes(const PooledNodes<U>& other) : pool(other.pool) {}  // NOLINT: rebinding converts implicitly
  T* allocate(size_t count) {
    if (count != 1) return static_cast<T*>(::operator new(count * sizeof(T)));
    return static_cast<T*>(pool->take(sizeof(T)));
  }
  void deallocate(T* pointer, size_t count) {
    if (count != 1) {
      ::operator delete(pointer);
      return;
    }
    pool->give_back(pointer, sizeof(T));
  }
  template <class U>
  bool operator==(const PooledNodes<U>& other) const {
    return pool == other.pool;
  }
  template <class U>
  bool operator!=(const PooledNodes<U>& other) const {
    return pool != other.pool;
  }
};

std::string format_bytes(size_t bytes) {
  std::ostringstream out;
  const double mib = static_cast<double>(bytes) / (1024.0 * 1024.0);
  if (mib >= 1024.0) {
    out.precision(2);
    out << std::fixed << mib / 1024.0 << " GiB";
  } else {
    out.precision(2);
    out << std::fixed << mib << " MiB";
  }
  return out.str();
}

class DeviceCache {
 public:
  explicit DeviceCache(c10::DeviceIndex device) : device_(device) {}

  Block* allocate(size_t requested, c10::StreamId stream_id, std::shared_ptr<c10::GatheredContext> context) {
    const size_t size = round_size(requested);
    std::lock_guard<std::mutex> lock(mutex_);
    collect_finished_events();
    // Any idle block of the stream that holds the request and wastes at most a
    // quarter of it (or is no larger than its class): a block allocated at the
    // exact size because its class did not fit serves the same request again.
    Block* block = take_cached(exact_size(requested), std::max(size, requested + requested / 4), stream_id);
    if (block == nullptr) {
      block = allocate_segment(size, requested, stream_id, context);
    }
    block->requested = requested;
    block->context = context;
    memory_history_record(device_, MemoryAction::alloc, address_of(block), block->size, stream_id, std::move(context));
    // A reused block may be up to a quarter larger than asked for; the
    // statistics count what the block holds, exactly what free() subtracts.
    count_live_block(block->size, requested);
    live_.insert(block);
    report_to_profiler(block->ptr, static_cast<int64_t>(block->size));
    return block;
  }

  void free(Block* block, std::shared_ptr<c10::GatheredContext> context) {
    std::lock_guard<std::mutex> lock(mutex_);
    live_.erase(block);
    memory_history_record(device_, MemoryAction::free_requested, address_of(block), block->size, block->stream_id,
                          context);
    for_stats(block->size, [&](StatType type) {
      stats_.allocation[static_cast<size_t>(type)].decrease(1);
      stats_.allocated_bytes[static_cast<size_t>(type)].decrease(block->size);
      stats_.requested_bytes[static_cast<size_t>(type)].decrease(block->requested);
    });
    report_to_profiler(block->ptr, -static_cast<int64_t>(block->size));
    if (axon_runtime_is_shut_down()) {
      return;  // the driver has released everything; nothing left to cache
    }
    if (!block->extra_users.empty() && record_use_events(block)) {
      return;  // becomes reusable once its other streams pass their events
    }
    make_reusable(block, std::move(context));
  }

  Block* track_external(void* ptr, size_t bytes, c10::StreamId stream_id, std::function<void()> release) {
    auto* block = new Block{device_, ptr, bytes, bytes, stream_id, {}, 0, std::move(release)};
    std::lock_guard<std::mutex> lock(mutex_);
    count_segment(bytes);
    count_live_block(bytes, bytes);
    live_.insert(block);
    memory_history_record(device_, MemoryAction::segment_alloc, address_of(block), bytes, stream_id, nullptr);
    memory_history_record(device_, MemoryAction::alloc, address_of(block), bytes, stream_id, nullptr);
    return block;
  }

  // Unlike free(), blocks until the memory is idle: its owner may reuse it
  // from the host as soon as `release` has run, outside any stream order.
  void free_external(Block* block) noexcept {
    std::vector<c10::Stream> users;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      users = std::move(block->extra_users);
      // Traced before `release` ends the ownership: once it has, the owner may wrap the same address
      // again, and its new segment must follow these events in the trace.
      for (const auto action :
           {MemoryAction::free_requested, MemoryAction::free_completed, MemoryAction::segment_free}) {
        memory_history_record(device_, action, address_of(block), block->size, block->stream_id, nullptr);
      }
    }
    users.emplace_back(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, device_), block->stream_id);
    wait_for_queued_work(users);
    try {
      block->release_external();
    } catch (...) {
      // Documented not to throw; a deleter has no one to report to.
    }
    {
      // Leaves the live set together with its statistics, so the two agree
      // whenever the lock is free (tests compare them after every test).
      std::lock_guard<std::mutex> lock(mutex_);
      live_.erase(block);
      for_stats(block->size, [&](StatType type) {
        stats_.allocation[static_cast<size_t>(type)].decrease(1);
        stats_.allocated_bytes[static_cast<size_t>(type)].decrease(block->size);
        stats_.requested_bytes[static_cast<size_t>(type)].decrease(block->requested);
        stats_.active[static_cast<size_t>(type)].decrease(1);
        stats_.active_bytes[static_cast<size_t>(type)].decrease(block->size);
        stats_.segment[static_cast<size_t>(type)].decrease(1);
        stats_.reserved_bytes[static_cast<size_t>(type)].decrease(block->size);
      });
    }
    delete block;
  }

  void record_stream(Block* block, const c10::Stream& stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stream.id() == block->stream_id && stream.device_index() == device_) {
      return;
    }
    for (const auto& user : block->extra_users) {
      if (user == stream) {
        return;
      }
    }
    block->extra_users.push_back(stream);
  }

  void empty_cache() {
    std::lock_guard<std::mutex> lock(mutex_);
    release_cached_blocks();
  }

  // torch.axon.set_per_process_memory_fraction: reserved bytes may not exceed
  // `fraction` of the device's capacity (CUDA's rule, which counts reserved,
  // not allocated, bytes).
  void set_memory_fraction(double fraction) {
    size_t free_bytes = 0;
    size_t total_bytes = 0;
    AXON_CHECK(axon_device_memory_info(device_, &free_bytes, &total_bytes), "reading device memory information");
    std::lock_guard<std::mutex> lock(mutex_);
    fraction_ = fraction;
    allowed_bytes_ = static_cast<size_t>(fraction * static_cast<double>(total_bytes));
  }

  double memory_fraction() {
    std::lock_guard<std::mutex> lock(mutex_);
    return fraction_;
  }

  std::vector<BlockSnapshot> blocks() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<BlockSnapshot> result;
    const auto add = [&](const Block* block, BlockSnapshot::State state) {
      result.push_back(BlockSnapshot{address_of(block), block->size, block->requested, block->stream_id, state,
                                     block->size <= kSmallBlockLimit, block->context});
    };
    live_.for_each([&](const Block* block) { add(block, BlockSnapshot::State::active_allocated); });
    std::unordered_set<const Block*> pending;
    for (const auto& entry : pending_) {
      if (pending.insert(entry.second).second) add(entry.second, BlockSnapshot::State::active_pending_free);
    }
    for (const Block* block : free_blocks_) add(block, BlockSnapshot::State::inactive);
    return result;
  }

  LiveBlockTotals live_totals() {
    std::lock_guard<std::mutex> lock(mutex_);
    LiveBlockTotals totals;
    live_.for_each([&](const Block* block) {
      totals.blocks += 1;
      totals.bytes += block->size;
      totals.requested_bytes += block->requested;
    });
    const auto all = static_cast<size_t>(StatType::AGGREGATE);
    totals.counted_blocks = stats_.allocation[all].current;
    totals.counted_bytes = stats_.allocated_bytes[all].current;
    totals.counted_requested_bytes = stats_.requested_bytes[all].current;
    return totals;
  }

  DeviceStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

  void reset_peak() {
    std::lock_guard<std::mutex> lock(mutex_);
    for_each_stat_array([](c10::CachingAllocator::StatArray& array) {
      for (auto& stat : array) stat.reset_peak();
    });
  }

  void reset_accumulated() {
    std::lock_guard<std::mutex> lock(mutex_);
    for_each_stat_array([](c10::CachingAllocator::StatArray& array) {
      for (auto& stat : array) stat.reset_accumulated();
    });
    stats_.num_alloc_retries = 0;
    stats_.num_ooms = 0;
    stats_.num_device_alloc = 0;
    stats_.num_device_free = 0;
    stats_.num_sync_all_streams = 0;
  }

 private:
  // torch.profiler(profile_memory=True): each allocation (+) and free (-) of
  // a block, with the device's totals after it, as CUDA's allocator reports.
  void report_to_profiler(void* ptr, int64_t delta) const {
    if (!c10::memoryProfilingEnabled()) return;
    const auto aggregate = static_cast<size_t>(StatType::AGGREGATE);
    c10::reportMemoryUsageToProfiler(ptr, delta, stats_.allocated_bytes[aggregate].current,
                                     stats_.reserved_bytes[aggregate].current,
                                     c10::Device(c10::DeviceType::PrivateUse1, device_));
  }

  template <typename F>
  static void for_stats(size_t size, F&& update) {
    update(StatType::AGGREGATE);
    update(size <= kSmallBlockLimit ? StatType::SMALL_POOL : StatType::LARGE_POOL);
  }

  template <typename F>
  void for_each_stat_array(F&& apply) {
    apply(stats_.allocation);
    apply(stats_.segment);
    apply(stats_.active);
    apply(stats_.inactive_split);
    apply(stats_.allocated_bytes);
    apply(stats_.reserved_bytes);
    apply(stats_.active_bytes);
    apply(stats_.inactive_split_bytes);
    apply(stats_.requested_bytes);
  }

  // Caller holds mutex_.
  void count_live_block(size_t size, size_t requested) {
    for_stats(size, [&](StatType type) {
      stats_.allocation[static_cast<size_t>(type)].increase(1);
      stats_.allocated_bytes[static_cast<size_t>(type)].increase(size);
      stats_.active[static_cast<size_t>(type)].increase(1);
      stats_.active_bytes[static_cast<size_t>(type)].increase(size);
      stats_.requested_bytes[static_cast<size_t>(type)].increase(requested);
    });
  }

  // Caller holds mutex_.
  void count_segment(size_t size) {
    for_stats(size, [&](StatType type) {
      stats_.segment[static_cast<size_t>(type)].increase(1);
      stats_.reserved_bytes[static_cast<size_t>(type)].increase(size);
    });
  }

  // Best fit among blocks last used by `stream_id`: the smallest of at least
  // `smallest` bytes, if it has at most `largest`.
  Block* take_cached(size_t smallest, size_t largest, c10::StreamId stream_id) {
    Block key{device_, nullptr, smallest, 0, stream_id, {}, 0};
    auto it = free_blocks_.lower_bound(&key);
    if (it == free_blocks_.end() || (*it)->stream_id != stream_id || (*it)->size > largest) {
      return nullptr;
    }
    Block* block = *it;
    free_blocks_.erase(it);
    return block;
  }

  bool within_fraction(size_t size) const {
    if (fraction_ >= 1.0) return true;  // the driver's own capacity is the limit
    const auto reserved = static_cast<size_t>(stats_.reserved_bytes[static_cast<size_t>(StatType::AGGREGATE)].current);
    return reserved + size <= allowed_bytes_;
  }

  Block* allocate_segment(size_t size, size_t requested, c10::StreamId stream_id,
                          const std::shared_ptr<c10::GatheredContext>& context) {
    // Cheapest first: the size class; the exact size, where only the class's
    // rounding is in the way (so rounding never causes an out-of-memory error
    // nor a release of the cache); then, after releasing the cache (a device
    // synchronization), the class and the exact size again.
    const size_t exact = std::min(size, exact_size(requested));
    void* ptr = nullptr;
    axon_status status = AXON_ERROR_OUT_OF_MEMORY;
    for (const bool after_release : {false, true}) {
      if (after_release) {
        if (free_blocks_.empty()) break;
        stats_.num_alloc_retries += 1;
        release_cached_blocks();
      }
      for (const size_t candidate : {size, exact}) {
        if (!within_fraction(candidate)) continue;
        status = axon_memory_allocate(device_, candidate, &ptr);
        if (status != AXON_ERROR_OUT_OF_MEMORY) {
          size = candidate;
          break;
        }
        if (candidate == exact) break;  // the class was the exact size
      }
      if (status != AXON_ERROR_OUT_OF_MEMORY) break;
    }
    if (status == AXON_ERROR_OUT_OF_MEMORY) {
      stats_.num_ooms += 1;
      throw_out_of_memory(requested, stream_id, context);
    }
    AXON_CHECK(status, "allocating device memory");
    stats_.num_device_alloc += 1;
    count_segment(size);
    memory_history_record(device_, MemoryAction::segment_alloc, reinterpret_cast<std::uintptr_t>(ptr), size, stream_id,
                          context);
    auto* block = new Block{device_, ptr, size, requested, stream_id, {}, 0};
    // Where the driver refuses, kernels ask it again per launch (and report its error there).
    if (driver_capability(device_, AXON_CAPABILITY_HOST_ADDRESSABLE_MEMORY) &&
        axon_memory_host_view(ptr, &block->host_view) != AXON_SUCCESS) {
      block->host_view = nullptr;
    }
    return block;
  }

  // An event per stream rather than axon_stream_synchronize, which would
  // consume (and hide) a pending task failure meant for the user.
  static void wait_for_queued_work(const std::vector<c10::Stream>& streams) noexcept {
    if (axon_runtime_is_shut_down()) {
      return;  // shutdown drained every stream
    }
    for (const auto& stream : streams) {
      axon_event event = nullptr;
      if (axon_event_create(AXON_EVENT_DEFAULT, &event) != AXON_SUCCESS) {
        continue;
      }
      try {
        if (axon_event_record(event, stream_handle(stream)) == AXON_SUCCESS) {
          wait_for_event(event);
        }
      } catch (...) {
        // An unknown stream has no work to wait for.
      }
      axon_event_destroy(event);
    }
  }

  // Traces the failure (with the driver's free bytes, as CUDA's snapshots have them) and raises it.
  [[noreturn]] void throw_out_of_memory(size_t requested, c10::StreamId stream_id,
                                        const std::shared_ptr<c10::GatheredContext>& context) {
    size_t free_bytes = 0;
    size_t total_bytes = 0;
    axon_device_memory_info(device_, &free_bytes, &total_bytes);
    memory_history_record(device_, MemoryAction::oom, 0, requested, stream_id, context, free_bytes);
    const auto& aggregate = static_cast<size_t>(StatType::AGGREGATE);
    const size_t allocated = stats_.allocated_bytes[aggregate].current;
    const size_t reserved = stats_.reserved_bytes[aggregate].current;
    TORCH_CHECK_WITH(OutOfMemoryError, false, "axon out of memory. Tried to allocate ", format_bytes(requested), " (",
                     requested, " bytes). Device axon:", static_cast<int>(device_), " has a total capacity of ",
                     format_bytes(total_bytes), " of which ", format_bytes(free_bytes), " is free. ",
                     format_bytes(allocated), " is allocated by PyTorch, and ", format_bytes(reserved),
                     " is reserved by PyTorch (", format_bytes(reserved - allocated), " reserved but unallocated).",
                     fraction_ < 1.0 ? c10::str(" This process may reserve ", format_bytes(allowed_bytes_), " (",
                                                fraction_, " of the capacity, set_per_process_memory_fraction).")
                                     : std::string(),
                     " AXON_DEVICE_MEMORY sets the capacity.");
  }

  // Records an event on every extra user stream; false if that failed.
  bool record_use_events(Block* block) {
    for (const auto& user : block->extra_users) {
      axon_event event = nullptr;
      if (axon_event_create(AXON_EVENT_DEFAULT, &event) != AXON_SUCCESS) {
        continue;
      }
      if (axon_event_record(event, stream_handle(user)) != AXON_SUCCESS) {
        axon_event_destroy(event);
        continue;
      }
      pending_.emplace_back(event, block);
      block->pending_events += 1;
    }
    block->extra_users.clear();
    return block->pending_events > 0;
  }

  void collect_finished_events() {
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (axon_event_query(it->first) == AXON_ERROR_NOT_READY) {
        ++it;
        continue;
      }
      finish_event(*it);
      it = pending_.erase(it);
    }
  }

  void finish_event(const std::pair<axon_event, Block*>& entry) {
    axon_event_destroy(entry.first);
    if (--entry.second->pending_events == 0) {
      make_reusable(entry.second, nullptr);
    }
  }

  void make_reusable(Block* block, std::shared_ptr<c10::GatheredContext> context) {
    for_stats(block->size, [&](StatType type) {
      stats_.active[static_cast<size_t>(type)].decrease(1);
      stats_.active_bytes[static_cast<size_t>(type)].decrease(block->size);
    });
    memory_history_record(device_, MemoryAction::free_completed, address_of(block), block->size, block->stream_id,
                          std::move(context));
    free_blocks_.insert(block);
  }

  // Caller holds mutex_. Waits for the device so no queued work still
  // touches a block, then returns every idle block to the driver. The wait
  // takes the device's pending task failure (a kernel's error, a failed
  // run-time check): raised here once the blocks are freed, not lost.
  void release_cached_blocks() {
    for (auto& entry : pending_) {
      wait_for_event(entry.first);
      finish_event(entry);
    }
    pending_.clear();
    if (free_blocks_.empty()) {
      return;
    }
    const axon_status waited = wait_for_device(device_);
    const std::string failure = axon_status_is_task_failure(waited) ? axon_last_error_message() : "";
    stats_.num_sync_all_streams += 1;
    for (Block* block : free_blocks_) {
      memory_history_record(device_, MemoryAction::segment_free, address_of(block), block->size, block->stream_id,
                            nullptr);
      axon_memory_free(block->ptr);
      stats_.num_device_free += 1;
      for_stats(block->size, [&](StatType type) {
        stats_.segment[static_cast<size_t>(type)].decrease(1);
        stats_.reserved_bytes[static_cast<size_t>(type)].decrease(block->size);
      });
      delete block;
    }
    free_blocks_.clear();
    if (axon_status_is_task_failure(waited))
      throw_status(waited, "synchronizing the device to release cached memory", failure);
  }

  double fraction_ = 1.0;
  size_t allowed_bytes_ = SIZE_MAX;  // fraction_ of the capacity
  const c10::DeviceIndex device_;
  std::mutex mutex_;
  DeviceStats stats_;
  NodePool free_block_nodes_;  // declared before the set, so it outlives the set's nodes
  std::set<Block*, BlockOrder, PooledNodes<Block*>> free_blocks_{BlockOrder{}, PooledNodes<Block*>(&free_block_nodes_)};
  LiveBlocks live_;
  std::vector<std::pair<axon_event, Block*>> pending_;
};

void free_block(void* context);

// Blocks whose DataPtr has the data pointer as its context, as ATen's
// copy-on-write requires (core/copy_on_write.h): found by address. Only
// storages that were lazily cloned are here; every other DataPtr carries its
// block as its context, which spares the kernels' launches a lookup. A block
// stays here until it is freed, also after its last sharer took the memory
// back (ATen hands that storage the DataPtr it wrapped): such a storage's
// launches go on paying a locked lookup.
class BlocksByAddress {
 public:
  void add(Block* block) {
    std::lock_guard<std::mutex> lock(mutex_);
    blocks_.emplace(block->ptr, block);
  }
  Block* find(const void* address) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto found = blocks_.find(address);
    return found == blocks_.end() ? nullptr : found->second;
  }
  Block* take(const void* address) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto found = blocks_.find(address);
    if (found == blocks_.end()) return nullptr;
    Block* block = found->second;
    blocks_.erase(found);
    return block;
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<const void*, Block*> blocks_;
};

BlocksByAddress& blocks_by_address() {
  static auto* blocks = new BlocksByAddress();  // leaked like the allocator: freed tensors may outlive statics
  return *blocks;
}

// The deleter of a shared block's DataPtr (its context is the data pointer).
void free_block_by_address(void* data) {
  if (Block* block = blocks_by_address().take(data)) free_block(block);
}

// The block behind an axon DataPtr: its context, or, for a shared block or
// one wrapped for copy-on-write, the block at its address. Null for empty
// and foreign memory.
Block* block_of(const c10::DataPtr& data_ptr) {
  if (data_ptr.get_deleter() == &free_block) return static_cast<Block*>(data_ptr.get_context());
  if (data_ptr.get() == nullptr) return nullptr;
  if (data_ptr.get_deleter() == &free_block_by_address || is_copy_on_write(data_ptr)) {
    return blocks_by_address().find(data_ptr.get());
  }
  return nullptr;
}

class AxonDeviceAllocator final : public c10::DeviceAllocator {
 public:
  AxonDeviceAllocator() {
    const auto count = device_count();
    for (c10::DeviceIndex i = 0; i < count; ++i) {
      caches_.push_back(std::make_unique<DeviceCache>(i));
    }
  }

  c10::DataPtr wrap_external(void* ptr, size_t bytes, c10::DeviceIndex device, std::function<void()> release) {
    check_device_index(device);
    const c10::Device where(c10::DeviceType::PrivateUse1, device);
    Block* block = cache(device).track_external(ptr, bytes, current_stream(device).id(), std::move(release));
    return c10::DataPtr(ptr, block, &free_block, where);
  }

  c10::DataPtr allocate(size_t bytes) override {
    const auto device = current_device();
    check_device_index(device);
    const c10::Device where(c10::DeviceType::PrivateUse1, device);
    if (bytes == 0) {
      return c10::DataPtr(nullptr, nullptr, &free_block, where);
    }
    // Gathered before the cache's lock is taken (core/memory_history.h says why).
    auto context = memory_history_wants_context(/*for_free=*/false) ? memory_history_gather() : nullptr;
    // `device` is checked above.
    Block* block = caches_[device]->allocate(bytes, current_stream(device).id(), std::move(context));
    return c10::DataPtr(block->ptr, block, &free_block, where);
  }

  c10::DeleterFnPtr raw_deleter() const override { return &free_block; }

  // ATen's copy-on-write copies a shared storage for its writer through
  // clone(), which calls this (core/copy_on_write.h): queued on the current
  // stream, before the write that asked for it.
  void copy_data(void* destination, const void* source, std::size_t count) const override {
    AXON_CHECK(axon_memory_copy_async(destination, source, count, current_stream_handle()), "copying device memory");
    // The source is memory a lazy clone shares. Its last sharer may free it
    // before this copy runs: the block must wait for this stream, as after a
    // record_stream, before another stream reuses it.
    if (Block* shared = blocks_by_address().find(source)) {
      caches_[shared->device]->record_stream(shared, current_stream(current_device()));
    }
  }

  bool initialized() override { return true; }

  void emptyCache(c10::MempoolId_t /*mempool_id*/) override {
    for (auto& device_cache : caches_) {
      device_cache->empty_cache();
    }
  }

  void recordStream(const c10::DataPtr& data_ptr, c10::Stream stream) override {
    Block* block = block_of(data_ptr);
    if (block == nullptr) {
      return;  // empty tensors and foreign memory need no tracking
    }
    cache(block->device).record_stream(block, stream);
  }

  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    return cache(resolve_device_index(device)).stats();
  }

  void resetAccumulatedStats(c10::DeviceIndex device) override {
    cache(resolve_device_index(device)).reset_accumulated();
  }

  void resetPeakStats(c10::DeviceIndex device) override { cache(resolve_device_index(device)).reset_peak(); }

  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    size_t free_bytes = 0;
    size_t total_bytes = 0;
    AXON_CHECK(axon_device_memory_info(resolve_device_index(device), &free_bytes, &total_bytes),
               "reading device memory information");
    return {free_bytes, total_bytes};
  }

  DeviceCache& cache(c10::DeviceIndex device) {
    check_device_index(device);
    return *caches_.at(device);
  }

  // For deleters, which must not throw: the block's device is known valid.
  DeviceCache& cache_of(const Block* block) { return *caches_[block->device]; }

 private:
  std::vector<std::unique_ptr<DeviceCache>> caches_;
};

AxonDeviceAllocator& allocator_instance() {
  // Leaked on purpose: tensors may be freed during interpreter shutdown.
  static auto* instance = new AxonDeviceAllocator();
  return *instance;
}

void free_block(void* context) {
  if (context == nullptr) {
    return;
  }
  auto* block = static_cast<Block*>(context);
  if (block->release_external) {
    allocator_instance().cache_of(block).free_external(block);
    return;
  }
  auto stack = memory_history_wants_context(/*for_free=*/true) ? memory_history_gather() : nullptr;
  allocator_instance().cache_of(block).free(block, std::move(stack));
}

}  // namespace

c10::DeviceAllocator* device_allocator() { return &allocator_instance(); }

void* device_allocator_host_view(const c10::DataPtr& data_ptr) {
  const Block* block = block_of(data_ptr);
  // A storage's bytes begin where its block does (blocks are never split).
  if (block == nullptr || block->host_view == nullptr || data_ptr.get() != block->ptr) return nullptr;
  return block->host_view;
}

void device_allocator_share_by_address(const c10::Storage& storage) {
  c10::DataPtr& data_ptr = storage.unsafeGetStorageImpl()->_mutable_data_ptr_no_checks();
  if (data_ptr.get_deleter() != &free_block || data_ptr.get() == nullptr) return;
  auto* block = static_cast<Block*>(data_ptr.get_context());
  if (block->ptr != data_ptr.get()) return;
  blocks_by_address().add(block);
  const c10::Device device = data_ptr.device();
  void* data = data_ptr.get();
  static_cast<void>(data_ptr.move_context().release());  // the registry holds the block now
  storage.set_data_ptr_noswap(c10::DataPtr(data, data, &free_block_by_address, device));
}

void device_allocator_record_stream(const c10::DataPtr& data_ptr, const c10::Stream& stream) {
  allocator_instance().recordStream(data_ptr, stream);
}

void device_allocator_set_memory_fraction(c10::DeviceIndex device, double fraction) {
  allocator_instance().cache(device).set_memory_fraction(fraction);
}

double device_allocator_memory_fraction(c10::DeviceIndex device) {
  return allocator_instance().cache(device).memory_fraction();
}

std::vector<BlockSnapshot> device_allocator_blocks(c10::DeviceIndex device) {
  return allocator_instance().cache(device).blocks();
}

LiveBlockTotals device_allocator_live_totals(c10::DeviceIndex device) {
  return allocator_instance().cache(device).live_totals();
}

c10::DataPtr device_allocator_wrap_external(void* pointer, size_t bytes, c10::DeviceIndex device,
                                            std::function<void()> release) {
  return allocator_instance().wrap_external(pointer, bytes, device, std::move(release));
}

// Registered lazily through a static so the allocator exists before any tensor.
struct RegisterDeviceAllocator {
  RegisterDeviceAllocator() { c10::SetAllocator(c10::DeviceType::PrivateUse1, device_allocator()); }
};
static RegisterDeviceAllocator register_device_allocator;

}  // namespace axon
