// Task 3.2: the reduction of the shards' gradients and the one SGD step (whole data-parallel steps
// are in task3_2_data_parallel_step_test.cpp, compiled beside this file). The reduction's checks live
// in reduction_checks.hpp, shared with the slips catalog.
#include <gtest/gtest.h>

#include "03_openmp/data_parallel.hpp"
#include "reduction_checks.hpp"

using namespace course;
using namespace course::s03test;

namespace {
const auto lesson_reduce = [](std::vector<std::unique_ptr<Replica<float>>>& replicas, const std::vector<ShardResult>& shards,
                       int B, float lr, float momentum) { reduce_and_update(replicas, shards, B, lr, momentum); };
}  // namespace

TEST(Task3_2_Reduction, WeightedSumOfTheShardsThenOneStep) {
  check_reduction(lesson_reduce, {3, 2, 2}, 31);
  check_reduction(lesson_reduce, {10}, 32);
  check_reduction(lesson_reduce, {5, 5, 4, 4}, 33);
}

TEST(Task3_2_Reduction, EmptyShardsAreLeftOut) {
  check_reduction(lesson_reduce, {1, 1, 0, 0}, 34);
  check_reduction(lesson_reduce, {1, 0, 0}, 35);
}

TEST(Task3_2_Reduction, OneReplicaIsPlainSgdBitForBit) { check_one_replica_is_plain_sgd(lesson_reduce); }
