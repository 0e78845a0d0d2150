// The seeded generator: reproducible, unbiased enough, and the same everywhere.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

#include "common/core/rng.hpp"

using namespace course;

TEST(Rng, SameSeedSameSequence) {
  Rng a(42), b(42), c(43), d(42, 1);
  bool differs_seed = false, differs_stream = false;
  for (int i = 0; i < 100; ++i) {
    const auto x = a.next_u64();
    EXPECT_EQ(x, b.next_u64());
    differs_seed |= x != c.next_u64();
    differs_stream |= x != d.next_u64();
  }
  EXPECT_TRUE(differs_seed);
  EXPECT_TRUE(differs_stream);
}

// Pinned values: xoshiro256** seeded by splitmix64, and Box-Muller. A change
// here changes every stage's initial weights, so it must be deliberate.
TEST(Rng, PinnedFirstValues) {
  EXPECT_EQ(Rng(42).next_u64(), 1546998764402558742ull);
  float w[3];
  Rng(42).fill_normal(w, 3, 1.0);
  EXPECT_FLOAT_EQ(w[0], -1.61322379f);
  EXPECT_FLOAT_EQ(w[1], 1.53448737f);
  EXPECT_FLOAT_EQ(w[2], 0.781692028f);
}

TEST(Rng, NormalMomentsAndBelowRange) {
  Rng r(1);
  const int n = 200000;
  double sum = 0, sq = 0;
  for (int i = 0; i < n; ++i) {
    const double x = r.normal();
    sum += x;
    sq += x * x;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sq / n, 1.0, 0.02);
  std::set<std::uint64_t> seen;
  for (int i = 0; i < 1000; ++i) {
    const auto v = r.below(7);
    ASSERT_LT(v, 7u);
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 7u);
  EXPECT_THROW(r.below(0), std::invalid_argument);
}

TEST(Rng, EpochOrderIsAPermutation) {
  const auto a = epoch_order(1000, 42, 0), b = epoch_order(1000, 42, 0), c = epoch_order(1000, 42, 1);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  std::set<int> s(a.begin(), a.end());
  EXPECT_EQ(s.size(), 1000u);
  EXPECT_EQ(*s.begin(), 0);
  EXPECT_EQ(*s.rbegin(), 999);
}

// Pinned shuffles. tools/compare_lib/course_rng.py, the copy of epoch_order
// through which PyTorch visits the same batches as every stage, is tested
// against the same numbers (tools/tests/test_peers.py), so the two cannot drift apart.
TEST(Rng, PinnedEpochOrders) {
  struct Case {
    int n;
    std::uint64_t seed;
    int epoch;
    std::vector<int> first;
    int last;
  };
  const Case cases[] = {{60000, 42, 0, {19911, 6414, 8512, 47660, 13461, 13805, 20195, 55348}, 6900},
                        {60000, 42, 1, {43234, 46400, 14883, 34010, 51533, 32077, 56536, 13643}, 11274},
                        {1280, 42, 0, {94, 1124, 1005, 152, 1233, 747, 950, 471}, 20},
                        {10, 7, 3, {6, 5, 3, 2, 9, 7, 4, 8}, 0}};
  for (const Case& c : cases) {
    const std::vector<int> order = epoch_order(c.n, c.seed, c.epoch);
    EXPECT_EQ(std::vector<int>(order.begin(), order.begin() + 8), c.first) << "n " << c.n << ", epoch " << c.epoch;
    EXPECT_EQ(order.back(), c.last) << "n " << c.n << ", epoch " << c.epoch;
  }
  Rng r(42, 11);
  EXPECT_EQ(r.uniform(), 0.4581923489586518);
  EXPECT_EQ(r.uniform(-0.5, 0.5), 0.30663206536774645);
}
