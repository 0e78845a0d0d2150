// What the GPU-against-CPU training comparisons of stages 05 to 09 share: the
// engine settings, the tolerance of 20 steps, the weights they start from, and
// the check that their 20 steps do not branch.
//
// A comparison of two runs that round differently carries a last-bit
// difference along for 20 steps. When a ReLU input or a max-pool window within
// rounding of a tie comes out the other way, its gradient goes elsewhere and
// the two runs branch: the comparison would fail a correct engine, or pass a
// wrong one by luck. Whether that happens depends on where the run starts and
// on the learning rate, so each comparison checks its own premise on the CPU.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "01_fc_softmax/cpu_engine.hpp"
#include "02_conv_pool/cnn.hpp"
#include "common/model/arch.hpp"
#include "common/data/data.hpp"
#include "common/train/engine.hpp"
#include "common/core/rng.hpp"
#include "engine_config.hpp"
#include "tensor_check.hpp"

namespace course::testkit {

/// The engine settings of the comparisons: the model `spec` (an --arch string) on `input`,
/// 10 classes, SGD with momentum 0.9, seed 11 (engine_config), and the loss.
inline EngineConfig comparison_config(const std::string& spec, Shape3 input, int batch, double lr = 0.05,
                                      const std::string& loss = "cross-entropy") {
  EngineConfig cfg = sgd_config(spec, input, batch, lr);
  cfg.loss = loss;
  return cfg;
}

// Tolerance of a run of SGD steps, float on the GPU against float on the CPU:
// |gpu - cpu| <= 5e-4 + 1e-3 |cpu| per parameter; the epoch's loss sum to 1e-4
// relative. The two engines add in different orders (cuDNN's algorithms, the
// GPU's GEMMs and fused sums, one CPU thread), so every step differs by float
// rounding (~1e-7 relative), which the following steps carry along. A wrong
// gradient anywhere moves the parameters by lr * gradient * steps, of order
// 1e-2: far outside, and the tests check that the parameters did move that much.
constexpr double kStepsParamAtol = 5e-4, kStepsParamRtol = 1e-3, kStepsLossRtol = 1e-4;

// Carrying a rounding difference along must not blow it up, or the comparison
// would fail a correct engine (or pass a wrong one by luck). It can: a ReLU
// input or a max-pool window within rounding of a tie comes out the other way,
// its gradient goes elsewhere, and the runs branch. From the He-initialised
// weights (zero biases) at lr 0.05, stage 02 alone ends 20 steps at summed
// losses 946.8 or 962.0 depending on a 1e-6 change of its initial weights. So
// the CNN comparisons start from weights spread uniformly (biases too, away
// from 0; spread_parameters below) at lr 0.01, where the same 1e-6 change stays
// under 7% of the tolerance (measured over 4 data seeds x 12 changes);
// expect_training_does_not_branch keeps that true.
constexpr double kCnnStepsLr = 0.01;

/// `params` (for their names and shapes) redrawn: weights uniform in
/// +-1/sqrt(fan-in), biases in +-0.1, so no bias starts at ReLU's kink.
inline std::vector<NamedTensor> spread_parameters(std::vector<NamedTensor> params, std::uint64_t seed) {
  Rng rng(seed, 11);
  for (NamedTensor& p : params) {
    const bool bias = p.tensor.shape.size() == 1;
    const double a = bias ? 0.1 : 1.0 / std::sqrt(static_cast<double>(p.tensor.size() / p.tensor.shape[0]));
    for (float& v : p.tensor.data) v = static_cast<float>(rng.uniform(-a, a));
  }
  return params;
}

/// The weights every stage starts from for cfg.seed (stage 02's initial_parameters), redrawn spread out.
inline std::vector<NamedTensor> spread_parameters(const EngineConfig& cfg, std::uint64_t seed) {
  return spread_parameters(initial_parameters(cfg.arch, cfg.input, cfg.classes, cfg.seed, make_cnn_layer<float>), seed);
}

/// Stage 02 trains `train` (one epoch) from `initial`, and again, twice, from
/// `initial` with every value moved by 1e-6 of itself (about ten times float's
/// rounding, more than a GPU's other summation order moves it). Each rerun must
/// end with its loss sum within 1e-5 relative and every parameter within a
/// quarter of the comparison's tolerance atol + rtol |p|.
inline void expect_training_does_not_branch(const EngineConfig& cfg, const Dataset& train,
                                            const std::vector<NamedTensor>& initial, double atol, double rtol) {
  CpuEngine reference(cfg, make_cnn_layer<float>);
  reference.set_parameters(initial);
  const EpochStats want = reference.train_epoch(train, 0, {});
  const std::vector<NamedTensor> trained = reference.get_parameters();
  for (std::uint64_t change : {1u, 2u}) {
    std::vector<NamedTensor> moved = initial;
    Rng rng(change, 3);
    for (NamedTensor& t : moved)
      for (float& v : t.tensor.data) v *= 1.f + (rng.uniform() < 0.5 ? -1e-6f : 1e-6f);
    CpuEngine cpu(cfg, make_cnn_layer<float>);
    cpu.set_parameters(moved);
    const EpochStats got = cpu.train_epoch(train, 0, {});
    EXPECT_NEAR(got.loss_sum, want.loss_sum, 1e-5 * want.loss_sum) << "change " << change;
    const std::vector<NamedTensor> params = cpu.get_parameters();
    for (std::size_t i = 0; i < params.size(); ++i) {
      double worst = 0;  // the largest difference, as a share of the comparison's tolerance
      for (std::size_t j = 0; j < params[i].tensor.size(); ++j) {
        const double w = trained[i].tensor.data[j], g = params[i].tensor.data[j];
        worst = std::max(worst, std::fabs(g - w) / (atol + rtol * std::fabs(w)));
      }
      EXPECT_LT(worst, 0.25) << "change " << change << ", " << params[i].name << ": a 1e-6 change of the weights "
                             << "grew to " << worst << " of the tolerance in 20 steps: the comparison would branch";
    }
  }
}

/// The 20-step CNN comparison of stages 06 and 08: `cnn` on 28x28 images, 19 batches of 32
/// and a last one of 16, at kCnnStepsLr from spread_parameters(cfg, 99), on synthetic data of seed 5.
struct CnnTwentySteps {
  static constexpr int batch = 32, examples = 19 * 32 + 16;
  static constexpr std::uint64_t data_seed = 5, start_seed = 99;
  static Shape3 input() { return {1, 28, 28}; }
  static EngineConfig config() { return comparison_config(named_model_spec("cnn"), input(), batch, kCnnStepsLr); }
  static std::vector<NamedTensor> start() { return spread_parameters(config(), start_seed); }
};

/// What the GPU stages' 20-step CNN comparisons rely on, checked on the CPU: their 20 steps do not branch.
inline void expect_cnn_twenty_steps_do_not_branch() {
  const EngineConfig cfg = CnnTwentySteps::config();
  const Dataset train = make_synthetic(CnnTwentySteps::examples, cfg.input, 10, CnnTwentySteps::data_seed);
  expect_training_does_not_branch(cfg, train, CnnTwentySteps::start(), kStepsParamAtol, kStepsParamRtol);
}

/// The settings of the GPU stages' evaluation check: `cnn` on 28x28 images at batch 64, from the
/// weights every stage starts from.
inline EngineConfig cnn_evaluation_config() { return comparison_config(named_model_spec("cnn"), {1, 28, 28}, 64); }

/// `gpu`, built from cnn_evaluation_config(), evaluates 300 synthetic images (seed 6) as stage 02 does
/// on the same weights: every example seen, the loss sum within kStepsLossRtol, the predictions and
/// the correct count apart by at most one near tie.
inline void expect_cnn_evaluation_like_stage02(Engine& gpu) {
  const EngineConfig cfg = cnn_evaluation_config();
  const Dataset test = make_synthetic(300, cfg.input, 10, 6);
  CpuEngine cpu(cfg, make_cnn_layer<float>);
  std::vector<int> got_pred, want_pred;
  const EpochStats got = gpu.evaluate(test, &got_pred), want = cpu.evaluate(test, &want_pred);
  EXPECT_EQ(got.seen, 300);
  EXPECT_NEAR(got.loss_sum, want.loss_sum, kStepsLossRtol * want.loss_sum);
  ASSERT_EQ(got_pred.size(), want_pred.size());
  long differ = 0;
  for (std::size_t i = 0; i < got_pred.size(); ++i) differ += got_pred[i] != want_pred[i];
  EXPECT_LE(differ, 1) << "predictions differ beyond a near tie";
  EXPECT_NEAR(got.correct, want.correct, 1);
}

/// Both sides of a comparison: a GPU engine and stage 02's CPU engine, each trained one
/// epoch of `train` from `initial` and then evaluated on `test`.
struct SideBySide {
  EpochStats gpu_train, cpu_train, gpu_test, cpu_test;
  std::vector<int> gpu_predictions, cpu_predictions;
  std::vector<NamedTensor> gpu_params, cpu_params;
};

/// Runs the GPU engine first (on the exercise track it fails on the stage's own task, not on
/// stage 02's) and then the CPU engine; `gpu` must already hold `initial`.
inline SideBySide train_side_by_side(Engine& gpu, const EngineConfig& cfg, const Dataset& train, const Dataset& test,
                                     const std::vector<NamedTensor>& initial) {
  SideBySide r;
  r.gpu_train = gpu.train_epoch(train, 0, {});
  r.gpu_test = gpu.evaluate(test, &r.gpu_predictions);
  r.gpu_params = gpu.get_parameters();
  CpuEngine cpu(cfg, make_cnn_layer<float>);
  cpu.set_parameters(initial);
  r.cpu_train = cpu.train_epoch(train, 0, {});
  r.cpu_test = cpu.evaluate(test, &r.cpu_predictions);
  r.cpu_params = cpu.get_parameters();
  return r;
}

/// One epoch of the GPU engine `gpu` (holding the weights it starts from) and of stage 02's
/// CPU engine from the same weights, on `train` in the same order, then both evaluated on
/// `test` (train_side_by_side): the same examples seen; the epoch's loss sums within
/// kStepsLossRtol and its correct counts within one (a near tie); with `absolute_errors`
/// (--loss mse, on an engine that adds them up) the absolute errors too; the test losses within
/// kStepsLossRtol and at most one test prediction apart; every parameter within
/// kStepsParamAtol + kStepsParamRtol |p|; and the parameters moved by more than ten times
/// kStepsParamAtol, or the comparison proves little. `context` starts every message.
inline void expect_epoch_like_stage02(Engine& gpu, const EngineConfig& cfg, const Dataset& train, const Dataset& test,
                                      const std::string& context, bool absolute_errors) {
  const std::vector<NamedTensor> start = gpu.get_parameters();
  const SideBySide r = train_side_by_side(gpu, cfg, train, test, start);
  EXPECT_EQ(r.gpu_train.seen, r.cpu_train.seen) << context;
  EXPECT_NEAR(r.gpu_train.loss_sum, r.cpu_train.loss_sum, kStepsLossRtol * r.cpu_train.loss_sum)
      << context << ": summed loss of the epoch, GPU (first) and stage 02 (second)";
  EXPECT_NEAR(r.gpu_train.correct, r.cpu_train.correct, 1) << context << ": correct predictions during the epoch";
  if (absolute_errors) {  // the MAE's numerator, added up beside the loss
    EXPECT_NEAR(r.gpu_train.abs_error_sum, r.cpu_train.abs_error_sum, kStepsLossRtol * r.cpu_train.abs_error_sum)
        << context << ": summed absolute errors of the epoch";
  }
  EXPECT_NEAR(r.gpu_test.loss_sum, r.cpu_test.loss_sum, kStepsLossRtol * r.cpu_test.loss_sum)
      << context << ": summed test loss, GPU (first) and stage 02 (second)";
  int differ = 0;
  for (std::size_t i = 0; i < r.cpu_predictions.size(); ++i) differ += r.gpu_predictions.at(i) != r.cpu_predictions[i];
  EXPECT_LE(differ, 1) << context << ": " << differ << " test predictions differ (a near tie may flip one)";
  ASSERT_EQ(r.gpu_params.size(), r.cpu_params.size()) << context;
  bool moved = false;
  for (std::size_t i = 0; i < r.cpu_params.size(); ++i) {
    const Tensor& want = r.cpu_params[i].tensor;
    ASSERT_EQ(r.gpu_params[i].name, r.cpu_params[i].name) << context;
    ASSERT_EQ(r.gpu_params[i].tensor.shape, want.shape) << context << ", " << r.cpu_params[i].name;
    EXPECT_TRUE(tensor_matches(context + ", " + r.cpu_params[i].name + " after the epoch (expected: stage 02's)",
                               parameter_shape(want.shape), r.gpu_params[i].tensor.data, want.data,
                               Tolerance{kStepsParamAtol, kStepsParamRtol}));
    for (std::size_t j = 0; j < want.size(); ++j)
      moved = moved || std::fabs(want.data[j] - start[i].tensor.data[j]) > 10 * kStepsParamAtol;
  }
  EXPECT_TRUE(moved) << context << ": the parameters hardly moved, so the comparison proves little";
}

}  // namespace course::testkit
