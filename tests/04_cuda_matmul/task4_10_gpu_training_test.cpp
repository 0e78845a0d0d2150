// Task 4.10: training and evaluation on the GPU, step for step against stage 01 on the CPU.
//
// Both sides start from the same weights (drawn here, so that these tests do
// not wait on stage 01's he_init) and visit the same batches (course::epoch_order
// of the same seed). The GPU side runs first. Its matrix products use cuBLAS, so
// these tests check the training step, not a matmul task (Stage04_GpuEngine runs
// every kernel).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "01_fc_softmax/network.hpp"
#include "01_fc_softmax/train.hpp"
#include "engine_config.hpp"
#include "gpu_testkit.hpp"
#include "mlp_comparison.hpp"
#include "mlp_engine.hpp"
#include "tensor_check.hpp"

using namespace course;
using namespace course::gputest;

namespace {

EngineConfig config_for(const std::string& spec, const Dataset& d, int batch,
                        const std::string& loss = "cross-entropy") {
  EngineConfig cfg = testkit::engine_config(spec, d.shape, d.classes, batch);
  cfg.lr = 0.01;
  cfg.momentum = 0.9;
  cfg.seed = 17;
  cfg.loss = loss;
  return cfg;
}

// One epoch of `steps` batches on both sides; the last batch is 5 examples short.
void train_both_and_compare(const std::string& spec, const std::string& loss, int steps, int batch, double max_abs,
                            double max_rel_norm) {
  const Dataset data = make_synthetic(steps * batch - 5, {1, 28, 28}, 10, 3);
  const EngineConfig cfg = config_for(spec, data, batch, loss);
  const std::vector<NamedTensor> weights = test_weights(cfg, 5);

  GpuEngine gpu = mlp_engine(cfg, kGemmCublas, weights);
  const EpochStats g = gpu.train_epoch(data, 0, {});

  Network<float> cpu = cpu_network(cfg, weights);
  const EpochStats c = train_epoch(cpu, data, cfg, 0, {});

  EXPECT_EQ(g.seen, c.seen) << "examples seen in the epoch: GPU (left) against stage 01 (right)";
  EXPECT_NEAR(g.loss_sum, c.loss_sum, 1e-4 * std::fabs(c.loss_sum))
      << "summed loss of the epoch: GPU (first) against stage 01 (second)";
  EXPECT_LE(std::labs(g.correct - c.correct), 1)
      << "correct predictions during the epoch: the GPU counted " << g.correct << ", stage 01 " << c.correct
      << " (one may differ, a near-tie)";
  expect_same_parameters(gpu, cpu, "after training", max_abs, max_rel_norm);
}

}  // namespace

// The mlp of the course for 20 steps. Tolerance: float sums in another order
// differ by ~1e-6 relative, and stay there over 20 steps: ||GPU - CPU|| / ||CPU||
// <= 1e-4 per tensor. Element-wise the bound is 1e-3, not 1e-5, because a
// pre-activation within ~1e-6 of ReLU's kink may fall on the other side on the
// other processor, which changes one gradient entry by up to ~1e-3 for one step.
TEST(Task4_10_GpuTraining, TwentyStepsMatchStage01) {
  SKIP_WITHOUT_GPU();
  train_both_and_compare("fc256,relu,fc128,relu,fc10", "cross-entropy", 20, 32, 1e-3, 1e-4);
}

// Smooth activations have no kink to fall on, so every element must agree to 1e-5.
TEST(Task4_10_GpuTraining, SmoothNetworkMatchesStage01Closely) {
  SKIP_WITHOUT_GPU();
  train_both_and_compare("fc64,tanh,fc32,sigmoid,fc24,softplus,fc10", "cross-entropy", 20, 16, 1e-5, 1e-5);
}

TEST(Task4_10_GpuTraining, LeakyReluAndMseMatchStage01) {
  SKIP_WITHOUT_GPU();
  train_both_and_compare("fc48,leaky,fc10", "mse", 10, 25, 1e-3, 1e-4);
}

// 77 test examples: two batches of 32 and one of 13. Predictions must agree,
// except where the CPU's two best logits are within 1e-4 (rounding may pick either).
TEST(Task4_10_GpuTraining, EvaluateMatchesStage01) {
  SKIP_WITHOUT_GPU();
  const Dataset test = make_synthetic(77, {1, 28, 28}, 10, 4);
  const EngineConfig cfg = config_for("fc256,relu,fc128,relu,fc10", test, 32);
  BothEvaluated both = evaluate_both(cfg, test_weights(cfg, 6), test);
  const EpochStats &g = both.gpu_stats, &c = both.cpu_stats;
  const std::vector<int>& gpu_predictions = both.gpu_predictions;
  ASSERT_EQ(g.seen, 77) << "examples the GPU evaluated";
  ASSERT_EQ(gpu_predictions.size(), 77u) << "predictions the GPU returned";
  EXPECT_NEAR(g.loss_sum, c.loss_sum, 1e-4 * std::fabs(c.loss_sum))
      << "summed test loss: GPU (first) against stage 01 (second)";
  expect_same_predictions(both.cpu, test, gpu_predictions, both.cpu_predictions, 1e-4f);
  long correct = 0;
  for (int i = 0; i < 77; ++i)
    correct += gpu_predictions[static_cast<std::size_t>(i)] == test.labels[static_cast<std::size_t>(i)];
  EXPECT_EQ(g.correct, correct) << "the correct count (left) must agree with the predictions returned (right)";
}

// The whole loop learns: as stage 01's Task 1.7 test, on the GPU.
TEST(Task4_10_GpuTraining, LossFallsAndAccuracyRises) {
  SKIP_WITHOUT_GPU();
  const Dataset train = make_synthetic(1000, {1, 28, 28}, 10, 1);
  const Dataset test = make_synthetic(300, {1, 28, 28}, 10, 2);
  EngineConfig cfg = config_for("fc32,relu,fc10", train, 32);
  cfg.lr = 0.05;
  GpuEngine gpu = mlp_engine(cfg, kGemmCublas, test_weights(cfg, 7));
  const EpochStats before = gpu.evaluate(test, nullptr);
  double first_loss = 0, last_loss = 0;
  for (int epoch = 0; epoch < 3; ++epoch) {
    const EpochStats s = gpu.train_epoch(train, epoch, {});
    ASSERT_EQ(s.seen, train.size()) << "examples seen in epoch " << epoch;
    (epoch == 0 ? first_loss : last_loss) = s.loss_sum / s.seen;
  }
  const EpochStats after = gpu.evaluate(test, nullptr);
  EXPECT_LT(last_loss, 0.5 * first_loss) << "training loss did not fall: mean loss " << first_loss << " in epoch 1, "
                                         << last_loss << " in epoch 3 (expected below half)";
  EXPECT_GT(double(after.correct) / after.seen, double(before.correct) / before.seen + 0.3)
      << "test accuracy " << double(before.correct) / before.seen << " before training, "
      << double(after.correct) / after.seen << " after 3 epochs (expected 0.3 more)";
  EXPECT_GT(double(after.correct) / after.seen, 0.8) << "test accuracy after 3 epochs";
}
