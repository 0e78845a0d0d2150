// Stage 04: the practice's network on the GPU against stage 01 on the CPU: sigmoid
// outputs trained with MSE (--output sigmoid --loss mse), leaky ReLU of slope 0.1
// (--leaky-slope 0.1), and the MAE both engines add up (EpochStats::abs_error_sum).
//
// As in task4_10_gpu_training_test.cpp: both sides start from the same weights, drawn
// here, and visit the same batches; the GPU's products run on cuBLAS, so this checks the
// step and the loss, not a matmul task. The refusals run anywhere; the rest skips
// without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <stdexcept>
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

// The practice's network: 12 features, 3 classes, like tools/make_tabular.py's set.
const char* const kPractice = "fc16,leaky0.1,fc8,leaky0.1,fc3,sigmoid";
const Shape3 kFeatures{12, 1, 1};

EngineConfig sigmoid_config(const std::string& spec, const Dataset& d, int batch, const std::string& loss = "mse") {
  EngineConfig cfg = testkit::engine_config(spec, d.shape, d.classes, batch);
  cfg.lr = 0.5;  // the practice's rate: sigmoid outputs under MSE have small gradients
  cfg.momentum = 0.9;
  cfg.seed = 29;
  cfg.loss = loss;
  return cfg;
}

}  // namespace

// Before any GPU work, so it runs anywhere: a sigmoid output goes with MSE only.
TEST(Stage04_SigmoidOutput, RefusesASigmoidOutputWithCrossEntropy) {
  const Dataset d = make_synthetic(8, kFeatures, 3, 1);
  const std::string m = message_of([&] { GpuEngine engine = mlp_engine(sigmoid_config(kPractice, d, 4, "cross-entropy")); });
  EXPECT_NE(m.find("--loss mse"), std::string::npos) << m;
}

// One epoch of 12 steps of 25 (the last 5 short) with lr 0.5: the parameters, the loss and
// the MAE match stage 01's. Leaky ReLU has a kink, so element-wise 1e-3 as in Task 4.10.
TEST(Stage04_SigmoidOutput, PracticeNetworkTrainsLikeStage01) {
  SKIP_WITHOUT_GPU();
  const Dataset data = make_synthetic(12 * 25 - 5, kFeatures, 3, 31);
  const EngineConfig cfg = sigmoid_config(kPractice, data, 25);
  const std::vector<NamedTensor> weights = test_weights(cfg, 32);

  GpuEngine gpu = mlp_engine(cfg, kGemmCublas, weights);
  ASSERT_TRUE(gpu.reports_mae());
  const EpochStats g = gpu.train_epoch(data, 0, {});
  Network<float> cpu = cpu_network(cfg, weights);
  const EpochStats c = train_epoch(cpu, data, cfg, 0, {});

  EXPECT_EQ(g.seen, c.seen);
  EXPECT_NEAR(g.loss_sum, c.loss_sum, 1e-4 * std::fabs(c.loss_sum)) << "summed MSE: GPU (first), stage 01 (second)";
  EXPECT_GT(c.abs_error_sum, 0.0);
  EXPECT_NEAR(g.abs_error_sum, c.abs_error_sum, 1e-4 * std::fabs(c.abs_error_sum))
      << "summed absolute errors (the MAE's numerator): GPU (first), stage 01 (second)";
  EXPECT_LE(std::labs(g.correct - c.correct), 1) << "correct predictions: GPU " << g.correct << ", CPU " << c.correct;
  expect_same_parameters(gpu, cpu, "after 12 steps", 1e-3, 1e-4);
}

// Evaluation: 77 examples (two batches of 32 and one of 13), the loss, the MAE and the
// predictions against stage 01's; the sigmoid outputs of the GPU side are in (0, 1).
TEST(Stage04_SigmoidOutput, EvaluateMatchesStage01) {
  SKIP_WITHOUT_GPU();
  const Dataset test = make_synthetic(77, kFeatures, 3, 33);
  const EngineConfig cfg = sigmoid_config(kPractice, test, 32);
  BothEvaluated both = evaluate_both(cfg, test_weights(cfg, 34), test);
  const EpochStats &g = both.gpu_stats, &c = both.cpu_stats;
  ASSERT_EQ(g.seen, 77);
  EXPECT_NEAR(g.loss_sum, c.loss_sum, 1e-5 * std::fabs(c.loss_sum) + 1e-7);
  EXPECT_NEAR(g.abs_error_sum, c.abs_error_sum, 1e-5 * std::fabs(c.abs_error_sum) + 1e-7)
      << "summed absolute errors of the test set: GPU (first), stage 01 (second)";
  // Every example's MAE is below 1 with outputs in (0, 1) and one-hot targets.
  EXPECT_LT(g.abs_error_sum, 77.0);
  ASSERT_EQ(both.gpu_predictions.size(), 77u);
  expect_same_predictions(both.cpu, test, both.gpu_predictions, both.cpu_predictions, 1e-5f);
}

// The slope reaches the kernels: with leaky0.3 the GPU's loss is stage 01's with 0.3, not
// with the default 0.01 (a kernel that kept kLeakySlope would give the second).
TEST(Stage04_SigmoidOutput, LeakySlopeReachesTheKernels) {
  SKIP_WITHOUT_GPU();
  const Dataset test = make_synthetic(64, kFeatures, 3, 35);
  EngineConfig cfg = sigmoid_config("fc32,leaky0.3,fc3", test, 64);
  const std::vector<NamedTensor> weights = test_weights(cfg, 36);
  GpuEngine gpu = mlp_engine(cfg, kGemmCublas, weights);
  const EpochStats g = gpu.evaluate(test, nullptr);
  Network<float> cpu = cpu_network(cfg, weights);
  const EpochStats c = evaluate(cpu, test, cfg, nullptr);
  cfg.arch = parse_arch("fc32,leaky,fc3");
  Network<float> cpu_default = cpu_network(cfg, weights);
  const EpochStats d = evaluate(cpu_default, test, cfg, nullptr);
  ASSERT_GT(std::fabs(c.loss_sum - d.loss_sum), 1e-3 * c.loss_sum) << "the test needs slopes that change the loss";
  EXPECT_NEAR(g.loss_sum, c.loss_sum, 1e-5 * std::fabs(c.loss_sum))
      << "summed MSE with leaky0.3: GPU (first), stage 01 (second); with the default slope stage 01 gives "
      << d.loss_sum;
  EXPECT_NEAR(g.abs_error_sum, c.abs_error_sum, 1e-5 * std::fabs(c.abs_error_sum))
      << "MSE without an output activation: the absolute errors of the raw outputs, as stage 01's";
}
