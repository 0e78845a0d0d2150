// The checks of Task 3.4 (evaluating a data set with every replica at once gives, bit for bit, what
// stage 01's evaluate() gives on one thread), taking the code under test as an argument: the task
// tests pass the lesson's evaluate_parallel, the slips catalog (slips_test.cpp) a learner's wrong
// copy, so both meet the very same messages. evaluate(replicas, data, cfg, predictions) -> EpochStats.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "01_fc_softmax/loss.hpp"
#include "01_fc_softmax/train.hpp"
#include "stage03_support.hpp"

namespace course::s03test {

// `evaluate` (evaluate_parallel, or a learner's copy) against stage 01's evaluate() on one thread.
template <typename Evaluate>
void check_evaluate(const Evaluate& evaluate_on_threads, const std::string& spec, Shape3 input,
                    const LayerFactory<float>& make, int R, int examples, int batch) {
  SCOPED_TRACE(spec + ", " + std::to_string(R) + " threads, " + std::to_string(examples) + " examples in batches of " +
               std::to_string(batch));
  TestReplicas<float> r(spec, input, R, make, 71);
  const Dataset data = make_synthetic(examples, input, kClasses, 72);
  const EngineConfig cfg = config(spec, input, batch, R);
  std::vector<int> got_predictions;
  const EpochStats got = evaluate_on_threads(r.set.replicas, data, cfg, &got_predictions);

  Network<float> ref(parse_arch(spec), input, kClasses, make);
  const auto weights = parameters_of(r.master);
  for (std::size_t p = 0; p < weights.size(); ++p) ref.params()[p]->value.data = weights[p].tensor.data;
  std::vector<int> want_predictions;
  const EpochStats want = evaluate(ref, data, cfg, &want_predictions);
  // The slips of adding each batch's mean loss, not its mean times its size, and of leaving the last
  // batch out.
  const Batcher batcher(data, cfg.batch, cfg.seed, 0, /*shuffle=*/false);
  std::vector<float> x(static_cast<std::size_t>(cfg.batch) * input.size()), probs(cfg.batch * kClasses), dz(probs.size());
  std::vector<int> y(static_cast<std::size_t>(cfg.batch));
  double sum_of_means = 0, last_batch = 0;
  for (int b = 0; b < batcher.num_batches(); ++b) {
    const int B = batcher.gather(b, x.data(), y.data());
    const float mean = loss_forward_backward(cfg.loss, ref.forward(x.data(), B), y.data(), probs.data(), dz.data(), B,
                                             kClasses);
    sum_of_means += mean;
    last_batch = static_cast<double>(mean) * B;
  }
  double without_last = 0;  // the batches' loss sums but the last, added in order as evaluate() adds them
  for (int b = 0; b + 1 < batcher.num_batches(); ++b) {
    const int B = batcher.gather(b, x.data(), y.data());
    without_last += static_cast<double>(loss_forward_backward(cfg.loss, ref.forward(x.data(), B), y.data(),
                                                              probs.data(), dz.data(), B, kClasses)) * B;
  }

  EXPECT_EQ(got.seen, want.seen) << "examples seen by evaluate_parallel";
  EXPECT_EQ(got.correct, want.correct) << "correct predictions of evaluate_parallel, against stage 01's evaluate()";
  EXPECT_TRUE(testkit::scalar_matches("loss_sum of evaluate_parallel, against stage 01's evaluate() (the per-batch "
                                      "losses, added in batch order, bit for bit)",
                                      got.loss_sum, want.loss_sum, testkit::kExact,
                                      {{"adding each batch's mean loss, not mean x batch size", {sum_of_means}},
                                       {"the last batch left out (b < batches - 1 where b < batches belongs; it "
                                        "holds " + testkit::detail::number(last_batch) + ")",
                                        {without_last}}}));
  ASSERT_EQ(got_predictions.size(), want_predictions.size()) << "predictions recorded by evaluate_parallel";
  EXPECT_TRUE(testkit::labels_match("predictions of evaluate_parallel, against stage 01's evaluate()",
                                    {{"example", static_cast<int>(want_predictions.size())}}, got_predictions,
                                    want_predictions));
}

template <typename Evaluate>
void check_predictions_are_optional(const Evaluate& evaluate_on_threads) {
  TestReplicas<float> r(kSmallMlp, kMlpInput, 2, make_dense_or_activation<float>, 71);
  const Dataset data = make_synthetic(40, kMlpInput, kClasses, 72);
  const EpochStats s = evaluate_on_threads(r.set.replicas, data, config(kSmallMlp, kMlpInput, 16, 2), nullptr);
  EXPECT_EQ(s.seen, 40) << "examples seen by evaluate_parallel with predictions = nullptr";
  EXPECT_GT(s.loss_sum, 0.0) << "loss_sum of evaluate_parallel with predictions = nullptr";
}

// --loss mse: each batch's absolute errors go into its own slot (loss_forward_backward's last
// argument) and are added in batch order, as stage 01 adds them: the MAE the trainer shows.
template <typename Evaluate>
void check_absolute_errors_as_one_thread(const Evaluate& evaluate_on_threads) {
  const std::string spec = "fc24,relu,fc10,sigmoid";  // the practice's sigmoid outputs
  for (int R : {1, 3}) {
    TestReplicas<float> r(spec, kMlpInput, R, make_dense_or_activation<float>, 71);
    const Dataset data = make_synthetic(77, kMlpInput, kClasses, 72);
    EngineConfig cfg = config(spec, kMlpInput, 16, R);
    cfg.loss = "mse";
    const EpochStats got = evaluate_on_threads(r.set.replicas, data, cfg, nullptr);

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

/// Every check of Task 3.4, in the order of the task's tests.
template <typename Evaluate>
void check_evaluate_parallel(const Evaluate& evaluate_on_threads) {
  for (int R = 1; R <= 4; ++R) check_evaluate(evaluate_on_threads, kSmallMlp, kMlpInput, make_dense_or_activation<float>, R, 77, 16);
  for (int R = 1; R <= 4; ++R) check_evaluate(evaluate_on_threads, kSmallCnn, kCnnInput, make_cnn_layer<float>, R, 77, 16);
  check_evaluate(evaluate_on_threads, kSmallMlp, kMlpInput, make_dense_or_activation<float>, 4, 20, 16);
  check_evaluate(evaluate_on_threads, kSmallMlp, kMlpInput, make_dense_or_activation<float>, 3, 5, 64);
  check_predictions_are_optional(evaluate_on_threads);
  check_absolute_errors_as_one_thread(evaluate_on_threads);
}

}  // namespace course::s03test
