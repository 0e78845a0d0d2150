// Task 9.5: sums and gathers over the ranks, for the epoch's metrics and the evaluation.
#include <gtest/gtest.h>

#include <vector>

#include "09_multi_gpu/communicator.hpp"
#include "09_multi_gpu/rank_sums.hpp"
#include "s09_support.hpp"

using namespace course;
using namespace course::s09test;

TEST(Task9_5_RankSums, OneRankGetsItsOwnNumbersBack) {
  S09_SKIP_WITHOUT_GPUS(1);
  Communicator comm(new_unique_id(), 0, 1, 60);
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreate(&stream));
  DeviceBuffer<double> scratch;
  const std::vector<double> mine = {1234.5678901234, 59999, 60000, -0.125, 1e300};
  EXPECT_EQ(sum_over_ranks(mine, comm.get(), stream, scratch), mine) << "sum_over_ranks of one rank (left), its own "
                                                                     << "values (right), to the bit";
  const EpochStats stats{4321.25, 55123, 60000};
  const EpochStats all = sum_stats_over_ranks(stats, comm.get(), stream, scratch);
  EXPECT_EQ(all.loss_sum, stats.loss_sum) << "the loss sum over one rank (left), the rank's own (right)";
  EXPECT_EQ(all.correct, stats.correct) << "the correct count over one rank (left), the rank's own (right)";
  EXPECT_EQ(all.seen, stats.seen) << "the examples seen over one rank (left), the rank's own (right)";
  DeviceBuffer<int> ints;
  const std::vector<int> predictions = {3, 1, 4, 1, 5, 9, 2, 6};
  EXPECT_EQ(gather_over_ranks(predictions, {8}, comm.get(), stream, ints), predictions)
      << "gather_over_ranks of one rank (left), its own predictions (right)";
  EXPECT_TRUE(gather_over_ranks({}, {0}, comm.get(), stream, ints).empty()) << "a gather of nothing";
  cudaStreamDestroy(stream);
}

TEST(Task9_5_RankSums, TwoRanksSumAndGatherInRankOrder) {
  S09_SKIP_WITHOUT_GPUS(2);
  LocalRanks ranks(2);
  std::vector<double> sums[2];
  std::vector<int> gathered[2];
  EpochStats stats[2];
  ranks.run([&](int r, ncclComm_t comm) {
    cudaStream_t stream = nullptr;
    CUDA_CHECK(cudaStreamCreate(&stream));
    DeviceBuffer<double> scratch;
    DeviceBuffer<int> ints;
    sums[r] = sum_over_ranks({1.5 + r, 10.0 * (r + 1)}, comm, stream, scratch);
    stats[r] = sum_stats_over_ranks({100.0 + r, 40 + r, 50}, comm, stream, scratch);
    // A test set of 5 in slices of 3 and 2: rank 0 predicts 0 1 2, rank 1 predicts 7 8.
    gathered[r] = gather_over_ranks(r == 0 ? std::vector<int>{0, 1, 2} : std::vector<int>{7, 8}, {3, 2}, comm, stream,
                                    ints);
    cudaStreamDestroy(stream);
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(sums[r], (std::vector<double>{4.0, 30.0})) << "rank " << r << ": {1.5, 10} + {2.5, 20}";
    EXPECT_EQ(stats[r].loss_sum, 201.0) << "rank " << r << ": loss sum 100 + 101";
    EXPECT_EQ(stats[r].correct, 81) << "rank " << r << ": correct count 40 + 41";
    EXPECT_EQ(stats[r].seen, 100) << "rank " << r << ": examples seen 50 + 50";
    EXPECT_EQ(gathered[r], (std::vector<int>{0, 1, 2, 7, 8})) << "rank " << r << ": rank 0's 3 predictions, then rank "
                                                              << "1's 2, in rank order";
  }
}

// The checks around the task (not a task).
TEST(Stage09_RankSums, AGatherOfTheWrongSizeIsRefused) {
  S09_SKIP_WITHOUT_GPUS(1);
  Communicator comm(new_unique_id(), 0, 1, 60);
  DeviceBuffer<int> ints;
  EXPECT_THROW(gather_over_ranks({1, 2}, {3}, comm.get(), nullptr, ints), std::invalid_argument);
  EXPECT_THROW(gather_over_ranks({1, 2}, {2, 2}, comm.get(), nullptr, ints), std::invalid_argument);
}
