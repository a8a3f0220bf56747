// ItemRing: a stream's queue of items, first in, first out.
//
// Why not std::deque: a deque allocates a block every few items pushed and
// frees it once they are popped. Items are pushed by the queuing thread and
// popped by the device's worker, so each of those frees hands memory back to
// another thread's malloc arena, under that arena's lock, while the queuing
// thread allocates from it for the next launch. A ring reuses its slots: a
// stream's queue allocates only when it grows past its longest length so far
// (and gives a large ring back once it drains).
//
// Thread-safety: none of its own; streams guard it with the Scheduler's mutex.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <utility>

namespace axon::common {

template <typename Item>
class ItemRing {
 public:
  ItemRing() = default;
  ItemRing(const ItemRing&) = delete;
  ItemRing& operator=(const ItemRing&) = delete;
  ~ItemRing() {
    while (!empty()) pop_front();
  }

  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }

  Item& front() { return *slot(head_); }
  const Item& front() const { return *slot(head_); }

  void push_back(Item&& item) {
    if (size_ == capacity_) grow();
    new (slot_memory(head_ + size_)) Item(std::move(item));
    ++size_;
  }

  void pop_front() {
    slot(head_)->~Item();
    head_ = (head_ + 1) & (capacity_ - 1);
    --size_;
    // A queue that once held a long backlog does not keep its memory for good.
    if (size_ == 0 && capacity_ > kKeptCapacity) {
      slots_.reset();
      capacity_ = 0;
      head_ = 0;
    }
  }

 private:
  static constexpr std::size_t kFirstCapacity = 16;  // a power of two, as every capacity
  static constexpr std::size_t kKeptCapacity = 1024;

  struct alignas(Item) Slot {
    unsigned char bytes[sizeof(Item)];
  };

  void* slot_memory(std::size_t index) { return slots_[index & (capacity_ - 1)].bytes; }
  Item* slot(std::size_t index) { return std::launder(reinterpret_cast<Item*>(slot_memory(index))); }
  const Item* slot(std::size_t index) const {
    return std::launder(reinterpret_cast<const Item*>(slots_[index & (capacity_ - 1)].bytes));
  }

  void grow() {
    const std::size_t capacity = capacity_ == 0 ? kFirstCapacity : capacity_ * 2;
    auto slots = std::make_unique<Slot[]>(capacity);
    for (std::size_t i = 0; i < size_; ++i) {
      Item* old = slot(head_ + i);
      new (slots[i].bytes) Item(std::move(*old));
      old->~Item();
    }
    slots_ = std::move(slots);
    capacity_ = capacity;
    head_ = 0;
  }

  std::unique_ptr<Slot[]> slots_;
  std::size_t capacity_ = 0;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace axon::common
