// Task 9.1: the slices of every step, their weights, and a rank's share of the epoch.
//
// What N ranks compute together must be what one GPU computes with the global
// batch: the slices of a step are that step's batch of the one-GPU run, in rank
// order, and the weights turn the ranks' slice means into the batch mean.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "09_multi_gpu/shard_plan.hpp"
#include "common/core/rng.hpp"
#include "tensor_check.hpp"

using namespace course;

namespace {

struct Case {
  long n;
  int G, N;
};

// Epochs that divide evenly, that end short, with G a multiple of N or not, a
// last step with fewer examples than ranks, one rank, and an empty epoch.
const Case kCases[] = {{10, 4, 2}, {12, 4, 2},  {60000, 128, 2}, {1000, 100, 3}, {13, 5, 4},
                       {9, 8, 8},  {17, 3, 3},  {5, 7, 7},       {64, 64, 1},   {0, 8, 2}};

std::string name(const Case& c) {
  return "n " + std::to_string(c.n) + ", G " + std::to_string(c.G) + ", N " + std::to_string(c.N);
}

// "rank 0 [0, 2), rank 1 [2, 4)": the slices the plan gives step s, for a message.
std::string slices_of(const ShardPlan& plan, long s) {
  std::string out;
  for (int r = 0; r < plan.world(); ++r) {
    const Shard part = plan.slice(s, r);
    out += (r ? ", rank " : "rank ") + std::to_string(r) + " [" + std::to_string(part.begin) + ", " +
           std::to_string(part.end) + ")";
  }
  return out;
}

}  // namespace

TEST(Task9_1_ShardPlan, SlicesOfAStepAreTheOneGpuBatchInRankOrder) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(name(c));
    const ShardPlan plan(c.n, c.G, c.N);
    ASSERT_EQ(plan.steps(), (c.n + c.G - 1) / c.G) << "steps of the epoch: ceil(n / G)";
    for (long s = 0; s < plan.steps(); ++s) {
      SCOPED_TRACE("step " + std::to_string(s) + " of the plan: " + slices_of(plan, s) + "; its batch is [" +
                   std::to_string(s * c.G) + ", " + std::to_string(std::min<long>(c.n, (s + 1) * c.G)) + ")");
      int at = static_cast<int>(s * c.G);  // where the one-GPU batch of step s starts
      const int end = static_cast<int>(std::min<long>(c.n, (s + 1) * c.G));
      int smallest = c.G, largest = 0;
      for (int r = 0; r < c.N; ++r) {
        const Shard part = plan.slice(s, r);
        ASSERT_EQ(part.begin, at) << "step " << s << ", rank " << r << " must start where "
                                  << (r ? "rank " + std::to_string(r - 1) + " ended" : "the step's batch starts");
        ASSERT_LE(part.begin, part.end) << "step " << s << ", rank " << r;
        at = part.end;
        smallest = std::min(smallest, part.size());
        largest = std::max(largest, part.size());
      }
      EXPECT_EQ(at, end) << "the slices of step " << s << " must end where its batch ends";
      EXPECT_LE(largest - smallest, 1) << "step " << s << ": slices differ by one example at most";
      if (plan.full(s)) {
        for (int r = 0; r < c.N; ++r) EXPECT_EQ(plan.slice(s, r).size(), plan.local_batch(r)) << "step " << s;
      }
    }
  }
}

TEST(Task9_1_ShardPlan, TheWeightsOfAStepAreItsShares) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(name(c));
    const ShardPlan plan(c.n, c.G, c.N);
    for (long s = 0; s < plan.steps(); ++s) {
      double total = 0;
      for (int r = 0; r < c.N; ++r) {
        const float w = plan.weight(s, r);
        EXPECT_FLOAT_EQ(w, static_cast<float>(plan.slice(s, r).size()) / static_cast<float>(plan.batch_size(s)))
            << "the weight of step " << s << ", rank " << r << ": its slice of " << plan.slice(s, r).size()
            << " examples over the step's " << plan.batch_size(s);
        if (plan.slice(s, r).size() == 0) {
          EXPECT_EQ(w, 0.f) << "an empty slice weighs nothing";
        }
        total += w;
      }
      EXPECT_NEAR(total, 1.0, 1e-6) << "the weights of step " << s << " sum to 1";
    }
  }
  // One rank: its weight is exactly 1, so its all-reduced gradient is its own, bit for bit.
  const ShardPlan alone(1000, 64, 1);
  for (long s = 0; s < alone.steps(); ++s) EXPECT_EQ(alone.weight(s, 0), 1.f) << "step " << s;
}

// The weighted slice means are the batch mean: the arithmetic the all-reduce relies on.
TEST(Task9_1_ShardPlan, WeightedSliceMeansAreTheBatchMean) {
  const ShardPlan plan(1000, 100, 3);  // slices of 34, 33 and 33
  std::vector<double> per_example(1000);
  Rng rng(7, 1);
  for (double& v : per_example) v = rng.uniform(-1, 1);
  for (long s = 0; s < plan.steps(); ++s) {
    double batch_mean = 0;
    for (long i = s * 100; i < (s + 1) * 100; ++i) batch_mean += per_example[static_cast<std::size_t>(i)] / 100;
    double combined = 0;
    for (int r = 0; r < 3; ++r) {
      const Shard part = plan.slice(s, r);
      double mean = 0;
      for (int i = part.begin; i < part.end; ++i) mean += per_example[static_cast<std::size_t>(i)] / part.size();
      combined += plan.weight(s, r) * mean;
    }
    EXPECT_NEAR(combined, batch_mean, 1e-6)
        << "step " << s << ": the weighted slice means (first) against the batch "
        << "mean (second); the weights " << plan.weight(s, 0) << ", " << plan.weight(s, 1) << ", " << plan.weight(s, 2);
  }
}

TEST(Task9_1_ShardPlan, RankOrderIsTheRanksSlicesStepByStep) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(name(c));
    const ShardPlan plan(c.n, c.G, c.N);
    const std::vector<int> order = epoch_order(static_cast<int>(c.n), 42, 3);
    std::vector<int> seen;
    for (int r = 0; r < c.N; ++r) {
      const std::vector<int> mine = plan.rank_order(order, r);
      // The engine takes them in batches of local_batch(r): its b-th batch must be its slice of step b.
      std::size_t at = 0;
      for (long s = 0; s < plan.steps(); ++s) {
        const Shard part = plan.slice(s, r);
        for (int p = part.begin; p < part.end; ++p, ++at) {
          ASSERT_LT(at, mine.size()) << "rank " << r << " has too few examples";
          ASSERT_EQ(mine[at], order[static_cast<std::size_t>(p)]) << "rank " << r << ", step " << s << ", position " << p;
        }
        if (s + 1 < plan.steps()) {
          EXPECT_EQ(part.size(), plan.local_batch(r)) << "every step but the last fills the engine's batch";
        }
      }
      EXPECT_EQ(at, mine.size()) << "rank " << r << " has examples beyond its slices";
      seen.insert(seen.end(), mine.begin(), mine.end());
    }
    // Together the ranks visit every example once: the first examples visited twice or never.
    std::vector<int> visits(static_cast<std::size_t>(c.n), 0);
    std::string wrong;
    std::size_t wrong_count = 0, outside = 0;
    for (int e : seen) {
      if (e < 0 || e >= c.n)
        ++outside;
      else
        ++visits[static_cast<std::size_t>(e)];
    }
    for (std::size_t e = 0; e < visits.size(); ++e)
      if (visits[e] != 1 && wrong_count++ < 4)
        wrong += "\n    example " + std::to_string(e) + ": visited " + std::to_string(visits[e]) + " times";
    EXPECT_TRUE(wrong_count == 0 && outside == 0 && seen.size() == static_cast<std::size_t>(c.n))
        << "together the ranks must visit every example once: " << seen.size() << " visits of " << c.n << " examples, "
        << wrong_count << " examples visited other than once, " << outside << " visits outside [0, n)" << wrong;
  }
  const ShardPlan one(100, 32, 1);
  const std::vector<int> order = epoch_order(100, 5, 0);
  EXPECT_TRUE(testkit::tensor_matches("rank_order(order, 0) of one rank (expected: the epoch's order as it is)",
                                      {{"position", 100}}, one.rank_order(order, 0), order, testkit::Tolerance{0, 0}));
}

TEST(Task9_1_ShardPlan, CountsTheExamplesDone) {
  const ShardPlan plan(10, 4, 2);
  EXPECT_EQ(plan.examples_through(0), 4);
  EXPECT_EQ(plan.examples_through(1), 8);
  EXPECT_EQ(plan.examples_through(2), 10);
  EXPECT_EQ(plan.batch_size(2), 2);
  EXPECT_FALSE(plan.full(2));
  EXPECT_TRUE(plan.full(1));
  // An example of the worked case in shard_plan.hpp: step 2 is o8 for rank 0, o9 for rank 1.
  EXPECT_EQ(plan.slice(2, 0).begin, 8);
  EXPECT_EQ(plan.slice(2, 1).begin, 9);
  EXPECT_EQ(plan.local_batch(0), 2);
}

// The checks around the task (not a task: they pass on the exercise track too).
TEST(Stage09_ShardPlan, RefusesWhatCannotBeSharded) {
  EXPECT_THROW(ShardPlan(10, 1, 2), std::invalid_argument) << "a global batch smaller than the ranks";
  EXPECT_THROW(ShardPlan(10, 4, 0), std::invalid_argument) << "no ranks";
  EXPECT_THROW(ShardPlan(-1, 4, 2), std::invalid_argument) << "a negative epoch";
  try {
    ShardPlan(10, 1, 2);
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--batch"), std::string::npos) << "the message names the flag: " << e.what();
  }
  const ShardPlan plan(10, 4, 2);
  EXPECT_THROW(plan.slice(3, 0), std::out_of_range);
  EXPECT_THROW(plan.slice(0, 2), std::out_of_range);
  EXPECT_THROW(plan.weight(-1, 0), std::out_of_range);
  EXPECT_THROW(plan.rank_order(std::vector<int>(9), 0), std::invalid_argument) << "an order of another length";
  EXPECT_THROW(plan.rank_order(std::vector<int>(10), 5), std::out_of_range);
}
