// Task 9.3: grouping the layers' gradient ranges into buckets.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "09_multi_gpu/bucket_plan.hpp"

using namespace course;

namespace {

// Ranges laid out like an engine's: `sizes` in model order, listed last layer first.
std::vector<GradientRange> backward_ranges(const std::vector<std::size_t>& sizes) {
  std::vector<GradientRange> ranges;
  std::size_t at = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    ranges.push_back({at, at + sizes[i], "layer" + std::to_string(i + 1) + " (x)"});
    at += sizes[i];
  }
  return {ranges.rbegin(), ranges.rend()};
}

// `cnn`'s layers, in floats: conv1, conv2, fc1, fc2.
const std::vector<std::size_t> kCnn = {160, 4640, 156900, 1010};

// "bucket 0: ranges 0-1 [4800, 162710), 631640 bytes; bucket 1: ...": a plan, for a message.
std::string plan_string(const std::vector<Bucket>& buckets) {
  std::string out;
  for (std::size_t j = 0; j < buckets.size(); ++j)
    out += (j ? "; bucket " : "bucket ") + std::to_string(j) + ": ranges " + std::to_string(buckets[j].first) + "-" +
           std::to_string(buckets[j].last) + " [" + std::to_string(buckets[j].begin) + ", " +
           std::to_string(buckets[j].end) + "), " + std::to_string(buckets[j].bytes()) + " bytes";
  return out.empty() ? "no buckets" : out;
}

// "range 0 [161700, 162710) fc2 ...": the ranges in the order they are finished, for a message.
std::string ranges_string(const std::vector<GradientRange>& ranges) {
  std::string out;
  for (std::size_t k = 0; k < ranges.size(); ++k)
    out += (k ? "; range " : "range ") + std::to_string(k) + " [" + std::to_string(ranges[k].begin) + ", " +
           std::to_string(ranges[k].end) + ") " + ranges[k].name;
  return out;
}

// Every bucket is contiguous, the buckets tile the buffer from its end to its
// start in the order the ranges are finished, and each holds whole ranges.
void expect_tiling(const std::vector<Bucket>& buckets, const std::vector<GradientRange>& ranges) {
  SCOPED_TRACE("the plan: " + plan_string(buckets) + "\nof the ranges: " + ranges_string(ranges));
  ASSERT_FALSE(buckets.empty());
  std::size_t next_range = 0;
  std::size_t end = ranges.front().end;
  for (std::size_t j = 0; j < buckets.size(); ++j) {
    const Bucket& b = buckets[j];
    EXPECT_EQ(b.first, next_range) << "bucket " << j << " must start with the next range finished";
    ASSERT_LE(b.first, b.last) << "bucket " << j;
    ASSERT_LT(b.last, ranges.size()) << "bucket " << j;
    EXPECT_EQ(b.end, end) << "bucket " << j << " must end where the bucket before it begins";
    EXPECT_EQ(b.end, ranges[b.first].end) << "bucket " << j;
    EXPECT_EQ(b.begin, ranges[b.last].begin) << "bucket " << j << " must reach down to its last range";
    next_range = b.last + 1;
    end = b.begin;
  }
  EXPECT_EQ(next_range, ranges.size()) << "every range must be in a bucket";
  EXPECT_EQ(end, 0u) << "the buckets must reach the start of the buffer";
}

}  // namespace

TEST(Task9_3_BucketPlan, ClosesABucketOnceItHoldsTheCap) {
  const auto ranges = backward_ranges(kCnn);  // fc2 1010, fc1 156900, conv2 4640, conv1 160
  const auto buckets = plan_buckets(ranges, 128 * 1024);
  expect_tiling(buckets, ranges);
  SCOPED_TRACE("cap 131072 bytes; the plan: " + plan_string(buckets) + "\nexpected: bucket 0: ranges 0-1 [4800, " +
               "162710), 631640 bytes; bucket 1: ranges 2-3 [0, 4800), 19200 bytes");
  ASSERT_EQ(buckets.size(), 2u) << "fc2 + fc1 reach 128 KiB; conv2 + conv1 are what is left";
  EXPECT_EQ(buckets[0].first, 0u);
  EXPECT_EQ(buckets[0].last, 1u);
  EXPECT_EQ(buckets[0].bytes(), (1010 + 156900) * sizeof(float));
  EXPECT_EQ(buckets[1].first, 2u);
  EXPECT_EQ(buckets[1].last, 3u);
  EXPECT_EQ(buckets[1].bytes(), (4640 + 160) * sizeof(float));
}

TEST(Task9_3_BucketPlan, EveryBucketButTheLastHoldsAtLeastTheCap) {
  const std::vector<std::size_t> sizes = {160, 4640, 9248, 36992, 6450, 510, 70000, 3, 3, 3};
  const auto ranges = backward_ranges(sizes);
  for (std::size_t cap : {std::size_t(4), std::size_t(100), std::size_t(20000), std::size_t(40000),
                          std::size_t(150000), std::size_t(1) << 30}) {
    SCOPED_TRACE("cap " + std::to_string(cap) + " bytes");
    const auto buckets = plan_buckets(ranges, cap);
    expect_tiling(buckets, ranges);
    SCOPED_TRACE("the plan: " + plan_string(buckets));
    for (std::size_t j = 0; j + 1 < buckets.size(); ++j) {
      EXPECT_GE(buckets[j].bytes(), cap) << "bucket " << j << " closed too early";
      // It closes as soon as it can: without its last range it held less than the cap.
      const std::size_t without_last = buckets[j].bytes() - ranges[buckets[j].last].size() * sizeof(float);
      if (buckets[j].last > buckets[j].first) {
        EXPECT_LT(without_last, cap) << "bucket " << j << " closed too late";
      }
    }
  }
}

TEST(Task9_3_BucketPlan, CapZeroIsABucketPerLayerAndAHugeCapIsOne) {
  const auto ranges = backward_ranges(kCnn);
  const auto per_layer = plan_buckets(ranges, 0);
  expect_tiling(per_layer, ranges);
  ASSERT_EQ(per_layer.size(), ranges.size()) << "cap 0: one bucket per range; the plan: " << plan_string(per_layer);
  for (std::size_t j = 0; j < per_layer.size(); ++j)
    EXPECT_EQ(per_layer[j].first, j) << "cap 0, bucket " << j << "; the plan: " << plan_string(per_layer);
  const auto one = plan_buckets(ranges, std::size_t(1) << 40);
  expect_tiling(one, ranges);
  ASSERT_EQ(one.size(), 1u) << "cap 2^40 bytes: one bucket; the plan: " << plan_string(one);
  EXPECT_EQ(one[0].size(), 160u + 4640 + 156900 + 1010) << "values in the one bucket";
  EXPECT_EQ(bucket_layers(one[0], ranges), "layer4-layer1");
  EXPECT_EQ(bucket_layers(per_layer[2], ranges), "layer2");
}

// The checks around the task (not a task: they pass on the exercise track too).
TEST(Stage09_BucketPlan, RefusesRangesThatAreNotNeighbours) {
  auto ranges = backward_ranges(kCnn);
  std::swap(ranges[1], ranges[2]);
  EXPECT_THROW(plan_buckets(ranges, 1024), std::invalid_argument) << "fc1 and conv2 out of order";
  ranges = backward_ranges(kCnn);
  ranges[3].end = ranges[3].begin;
  EXPECT_THROW(plan_buckets(ranges, 1024), std::invalid_argument) << "an empty range";
  EXPECT_TRUE(plan_buckets({}, 1024).empty()) << "no parameters, no buckets";
}
