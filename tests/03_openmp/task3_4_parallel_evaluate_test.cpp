// Task 3.4: evaluating a data set with every replica at once gives, bit for bit, what stage 01's
// evaluate() gives on one thread. The checks live in evaluate_checks.hpp, shared with the slips
// catalog.
#include <gtest/gtest.h>

#include "03_openmp/parallel_evaluate.hpp"
#include "evaluate_checks.hpp"

using namespace course;
using namespace course::s03test;

namespace {
const auto lesson_evaluate = [](std::vector<std::unique_ptr<Replica<float>>>& replicas, const Dataset& data,
                       const EngineConfig& cfg, std::vector<int>* predictions) {
  return evaluate_parallel(replicas, data, cfg, predictions);
};
}  // namespace

TEST(Task3_4_ParallelEvaluate, MlpSameAsStage01BitForBit) {
  for (int R = 1; R <= 4; ++R) check_evaluate(lesson_evaluate, kSmallMlp, kMlpInput, make_dense_or_activation<float>, R, 77, 16);
}

TEST(Task3_4_ParallelEvaluate, CnnSameAsStage01BitForBit) {
  for (int R = 1; R <= 4; ++R) check_evaluate(lesson_evaluate, kSmallCnn, kCnnInput, make_cnn_layer<float>, R, 77, 16);
}

TEST(Task3_4_ParallelEvaluate, FewerBatchesThanThreads) {
  check_evaluate(lesson_evaluate, kSmallMlp, kMlpInput, make_dense_or_activation<float>, 4, 20, 16);  // 2 batches, 4 threads
  check_evaluate(lesson_evaluate, kSmallMlp, kMlpInput, make_dense_or_activation<float>, 3, 5, 64);   // 1 short batch
}

TEST(Task3_4_ParallelEvaluate, PredictionsAreOptional) { check_predictions_are_optional(lesson_evaluate); }

// --loss mse: each batch's absolute errors go into its own slot and are added in batch order.
TEST(Task3_4_ParallelEvaluate, MseAbsoluteErrorsSameAsOneThread) { check_absolute_errors_as_one_thread(lesson_evaluate); }
