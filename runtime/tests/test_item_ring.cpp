// ItemRing in isolation: first in, first out across growth and wrap-around,
// and every item destroyed exactly once.

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "item_ring.h"

using axon::common::ItemRing;

namespace {

// Counts live instances, so a test can see that none leaks or dies twice.
struct Counted {
  explicit Counted(int value, int* live) : value(value), live(live) { ++*live; }
  Counted(Counted&& other) noexcept : value(other.value), live(other.live) { ++*live; }
  Counted(const Counted&) = delete;
  Counted& operator=(const Counted&) = delete;
  ~Counted() { --*live; }
  int value;
  int* live;
};

}  // namespace

TEST(ItemRing, KeepsOrderWhileGrowingAndWrappingAround) {
  ItemRing<std::unique_ptr<std::string>> ring;
  EXPECT_TRUE(ring.empty());
  int next_pushed = 0;
  int next_popped = 0;
  // Pops lag pushes, so the head moves through the slots while the ring grows past several capacities.
  for (int round = 0; round < 200; ++round) {
    for (int i = 0; i < 3; ++i) ring.push_back(std::make_unique<std::string>(std::to_string(next_pushed++)));
    for (int i = 0; i < 2; ++i) {
      ASSERT_FALSE(ring.empty());
      EXPECT_EQ(*ring.front(), std::to_string(next_popped++));
      ring.pop_front();
    }
  }
  EXPECT_EQ(ring.size(), static_cast<std::size_t>(next_pushed - next_popped));
  while (!ring.empty()) {
    EXPECT_EQ(*ring.front(), std::to_string(next_popped++));
    ring.pop_front();
  }
  EXPECT_EQ(next_popped, next_pushed);
}

TEST(ItemRing, DestroysEachItemOnceIncludingThoseLeftQueued) {
  int live = 0;
  {
    ItemRing<Counted> ring;
    // Past the capacity a drained ring gives back, then drained, then refilled and left queued.
    for (int i = 0; i < 5000; ++i) ring.push_back(Counted(i, &live));
    EXPECT_EQ(live, 5000);
    for (int i = 0; i < 5000; ++i) {
      EXPECT_EQ(ring.front().value, i);
      ring.pop_front();
    }
    EXPECT_EQ(live, 0);
    EXPECT_TRUE(ring.empty());
    for (int i = 0; i < 40; ++i) ring.push_back(Counted(i, &live));
    ring.pop_front();
    EXPECT_EQ(ring.front().value, 1);
    EXPECT_EQ(live, 39);
  }
  EXPECT_EQ(live, 0);
}
