// Task 3.4: evaluating a data set with every replica at once gives, bit for
// bit, what stage 01's evaluate() gives on one thread.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "01_fc_softmax/loss.hpp"
#include "01_fc_softmax/train.hpp"
#include "03_openmp/parallel_evaluate.hpp"
#include "stage03_support.hpp"

using namespace course;
using namespace course::s03test;

namespace {

void check_evaluate(const std::string& spec, Shape3 input, const LayerFactory<float>& make, int R, int examples,
                    int batch) {
  SCOPED_TRACE(spec + ", " + std::to_string(R) + " threads, " + std::to_string(examples) + " examples in batches of " +
               std::to_string(batch));
  TestReplicas<float> r(spec, input, R, make, 71);
  const Dataset data = make_synthetic(examples, input, kClasses, 72);
  const EngineConfig cfg = config(spec, input, batch, R);
  std::vector<int> got_predictions;
  const EpochStats got = evaluate_parallel(r.set.replicas, data, cfg, &got_predictions);

  Network<float> ref(parse_arch(spec), input, kClasses, make);
  const auto weights = parameters_of(r.master);
  for (std::size_t p = 0; p < weights.size(); ++p) ref.params()[p]->value.data = weights[p].tensor.data;
  std::vector<int> want_predictions;
  const EpochStats want = evaluate(ref, data, cfg, &want_predictions);
  // The slip of adding each batch's mean loss, not its mean times its size.
  const Batcher batcher(data, cfg.batch, cfg.seed, 0, /*shuffle=*/false);
  std::vector<float> x(static_cast<std::size_t>(cfg.batch) * input.size()), probs(cfg.batch * kClasses), dz(probs.size());
  std::vector<int> y(static_cast<std::size_t>(cfg.batch));
  double sum_of_means = 0;
  for (int b = 0; b < batcher.num_batches(); ++b) {
    const int B = batcher.gather(b, x.data(), y.data());
    sum_of_means += loss_forward_backward(cfg.loss, ref.forward(x.data(), B), y.data(), probs.data(), dz.data(), B, kClasses);
  }

  EXPECT_EQ(got.seen, want.seen) << "examples seen by evaluate_parallel";
  EXPECT_EQ(got.correct, want.correct) << "correct predictions of evaluate_parallel, against stage 01's evaluate()";
  EXPECT_TRUE(testkit::scalar_matches("loss_sum of evaluate_parallel, against stage 01's evaluate() (the per-batch "
                                      "losses, added in batch order, bit for bit)",
                                      got.loss_sum, want.loss_sum, testkit::kExact,
                                      {{"adding each batch's mean loss, not mean x batch size", {sum_of_means}}}));
  ASSERT_EQ(got_predictions.size(), want_predictions.size()) << "predictions recorded by evaluate_parallel";
  EXPECT_TRUE(testkit::labels_match("predictions of evaluate_parallel, against stage 01's evaluate()",
                                    {{"example", static_cast<int>(want_predictions.size())}}, got_predictions,
                                    want_predictions));
}

}  // namespace

TEST(Task3_4_ParallelEvaluate, MlpSameAsStage01BitForBit) {
  for (int R = 1; R <= 4; ++R) check_evaluate(kSmallMlp, kMlpInput, make_dense_or_activation<float>, R, 77, 16);
}

TEST(Task3_4_ParallelEvaluate, CnnSameAsStage01BitForBit) {
  for (int R = 1; R <= 4; ++R) check_evaluate(kSmallCnn, kCnnInput, make_cnn_layer<float>, R, 77, 16);
}

TEST(Task3_4_ParallelEvaluate, FewerBatchesThanThreads) {
  check_evaluate(kSmallMlp, kMlpInput, make_dense_or_activation<float>, 4, 20, 16);  // 2 batches, 4 threads
  check_evaluate(kSmallMlp, kMlpInput, make_dense_or_activation<float>, 3, 5, 64);   // 1 short batch
}

TEST(Task3_4_ParallelEvaluate, PredictionsAreOptional) {
  TestReplicas<float> r(kSmallMlp, kMlpInput, 2, make_dense_or_activation<float>, 71);
  const Dataset data = make_synthetic(40, kMlpInput, kClasses, 72);
  const EpochStats s = evaluate_parallel(r.set.replicas, data, config(kSmallMlp, kMlpInput, 16, 2), nullptr);
  EXPECT_EQ(s.seen, 40) << "examples seen by evaluate_parallel with predictions = nullptr";
  EXPECT_GT(s.loss_sum, 0.0) << "loss_sum of evaluate_parallel with predictions = nullptr";
}

// --loss mse: each batch's absolute errors go into its own slot (loss_forward_backward's last
// argument) and are added in batch order, as stage 01 adds them: the MAE the trainer shows.
TEST(Task3_4_ParallelEvaluate, MseAbsoluteErrorsSameAsOneThread) {
  const std::string spec = "fc24,relu,fc10,sigmoid";  // the practice's sigmoid outputs
  for (int R : {1, 3}) {
    TestReplicas<float> r(spec, kMlpInput, R, make_dense_or_activation<float>, 71);
    const Dataset data = make_synthetic(77, kMlpInput, kClasses, 72);
    EngineConfig cfg = config(spec, kMlpInput, 16, R);
    cfg.loss = "mse";
    const EpochStats got = evaluate_parallel(r.set.replicas, data, cfg, nullptr);

    Network<float> ref(parse_arch(spec), kMlpInput, kClasses, make_dense_or_activation<float>);
    const auto weights = parameters_of(r.master);
    for (std::size_t p = 0; p < weights.size(); ++p) ref.params()[p]->value.data = weights[p].tensor.data;
    const Batcher batcher(data, cfg.batch, cfg.seed, 0, /*shuffle=*/false);
    std::vector<float> x(static_cast<std::size_t>(cfg.batch) * kMlpInput.size());
    std::vector<int> y(static_cast<std::size_t>(cfg.batch));
    double want = 0;
    for (int b = 0; b < batcher.num_batches(); ++b) {
      const int B = batcher.gather(b, x.data(), y.data());
      want += absolute_error_sum(ref.forward(x.data(), B), y.data(), B, kClasses);
    }
    EXPECT_TRUE(testkit::scalar_matches("abs_error_sum of evaluate_parallel with --loss mse, " + std::to_string(R) +
                                            " threads (the batches' absolute errors, added in batch order)",
                                        got.abs_error_sum, want, testkit::kExact,
                                        {{"left at 0: pass &batch_abs_error[b] to loss_forward_backward", {0.0}}}));
  }
}
