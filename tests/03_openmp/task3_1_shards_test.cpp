// Task 3.1: every replica runs forward and backward on its own shard of the batch. The checks
// live in shard_checks.hpp, shared with the slips catalog.
#include <gtest/gtest.h>

#include "03_openmp/data_parallel.hpp"
#include "shard_checks.hpp"

using namespace course;
using namespace course::s03test;

namespace {
const auto lesson = [](std::vector<std::unique_ptr<Replica<float>>>& replicas, const float* x, const int* labels, int B,
                       const std::string& loss) { return forward_backward_shards(replicas, x, labels, B, loss); };
}  // namespace

TEST(Task3_1_Shards, EachReplicaHoldsItsShardsGradientMlp) {
  for (int R = 1; R <= 4; ++R) check_shards(lesson, kSmallMlp, kMlpInput, make_dense_or_activation<float>, R, 7);
}

TEST(Task3_1_Shards, EachReplicaHoldsItsShardsGradientCnn) {
  for (int R = 1; R <= 4; ++R) check_shards(lesson, kSmallCnn, kCnnInput, make_cnn_layer<float>, R, 7);
}

TEST(Task3_1_Shards, MoreReplicasThanExamples) {
  check_shards(lesson, kSmallMlp, kMlpInput, make_dense_or_activation<float>, 4, 2);  // shards 2 and 3 are empty
  check_shards(lesson, kSmallMlp, kMlpInput, make_dense_or_activation<float>, 3, 1);
}

TEST(Task3_1_Shards, UnknownLossIsAnErrorNotACrash) { check_unknown_loss_throws(lesson); }

// --loss mse: every shard reports its absolute errors (loss_forward_backward's last argument).
TEST(Task3_1_Shards, MseShardsReportTheirAbsoluteErrors) { check_shards_report_absolute_errors(lesson); }
