// Task 3.2: the reduction of the shards' gradients and the one SGD step; then whole data-parallel
// steps against stage 01 (MLP) and stage 02 (CNN). The reduction's checks live in
// reduction_checks.hpp, shared with the slips catalog.
#include <gtest/gtest.h>

#include "01_fc_softmax/cpu_engine.hpp"
#include "03_openmp/data_parallel.hpp"
#include "03_openmp/omp_engine.hpp"
#include "reduction_checks.hpp"

using namespace course;
using namespace course::s03test;

namespace {
const auto lesson = [](std::vector<std::unique_ptr<Replica<float>>>& replicas, const std::vector<ShardResult>& shards,
                       int B, float lr, float momentum) { reduce_and_update(replicas, shards, B, lr, momentum); };
}  // namespace

TEST(Task3_2_Reduction, WeightedSumOfTheShardsThenOneStep) {
  check_reduction(lesson, {3, 2, 2}, 31);
  check_reduction(lesson, {10}, 32);
  check_reduction(lesson, {5, 5, 4, 4}, 33);
}

TEST(Task3_2_Reduction, EmptyShardsAreLeftOut) {
  check_reduction(lesson, {1, 1, 0, 0}, 34);
  check_reduction(lesson, {1, 0, 0}, 35);
}

TEST(Task3_2_Reduction, OneReplicaIsPlainSgdBitForBit) { check_one_replica_is_plain_sgd(lesson); }

// ---- whole steps: Tasks 3.1 and 3.2 together, through the engine ---------------------------

TEST(Task3_2_DataParallelStep, MlpMatchesStage01) {
  expect_step_matches_one_thread<DataParallelEngine>(named_model_spec("mlp"), make_dense_or_activation<float>);
}

TEST(Task3_2_DataParallelStep, CnnMatchesStage02) {
  expect_step_matches_one_thread<DataParallelEngine>(named_model_spec("cnn"), make_cnn_layer<float>);
}
