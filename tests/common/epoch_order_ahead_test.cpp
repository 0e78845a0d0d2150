// The GPU engines' epoch order, shuffled one epoch ahead on another thread:
// whatever the engine asks, in whatever sequence, it gets epoch_order's values.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/data/epoch_order_ahead.hpp"
#include "common/core/rng.hpp"

using namespace course;

TEST(EpochOrderAhead, EpochAfterEpochIsEpochOrderAndComesFromTheThread) {
  EpochOrderAhead orders;
  for (int epoch = 0; epoch < 5; ++epoch)
    EXPECT_EQ(orders.order(1000, 42, epoch), epoch_order(1000, 42, epoch)) << "epoch " << epoch;
  EXPECT_EQ(orders.handed_over(), 4) << "every epoch after the first was shuffled ahead";
}

// A resume starts at any epoch, its first epoch on a shorter set (the examples it
// had left), and a later run may use another seed: none of that may reuse the
// order shuffled for something else.
TEST(EpochOrderAhead, AnyOtherRequestIsComputedOnTheSpot) {
  EpochOrderAhead orders;
  EXPECT_EQ(orders.order(1000, 42, 7), epoch_order(1000, 42, 7)) << "starting at epoch 7";
  EXPECT_EQ(orders.order(1000, 42, 7), epoch_order(1000, 42, 7)) << "the same epoch again";
  EXPECT_EQ(orders.order(360, 42, 8), epoch_order(360, 42, 8)) << "a shorter set";
  EXPECT_EQ(orders.order(1000, 42, 9), epoch_order(1000, 42, 9)) << "the full set after it";
  EXPECT_EQ(orders.order(1000, 43, 10), epoch_order(1000, 43, 10)) << "another seed";
  EXPECT_EQ(orders.order(1000, 43, 12), epoch_order(1000, 43, 12)) << "an epoch skipped";
  EXPECT_EQ(orders.handed_over(), 0) << "none of these was the epoch shuffled ahead";
  EXPECT_EQ(orders.order(1000, 43, 13), epoch_order(1000, 43, 13));
  EXPECT_EQ(orders.handed_over(), 1);
}

TEST(EpochOrderAhead, EmptyAndSingleSets) {
  EpochOrderAhead orders;
  EXPECT_TRUE(orders.order(0, 1, 0).empty());
  EXPECT_TRUE(orders.order(0, 1, 1).empty());
  EXPECT_EQ(orders.order(1, 1, 0), std::vector<int>{0});
  EXPECT_EQ(orders.order(1, 1, 1), std::vector<int>{0});
}

// Dropped while a shuffle is still running: the destructor waits for its thread.
TEST(EpochOrderAhead, DestroyedWithAShuffleInFlight) {
  for (int i = 0; i < 20; ++i) {
    EpochOrderAhead orders;
    EXPECT_EQ(orders.order(200000, 5, i).size(), 200000u);
  }
}
