// Stage 04's trainer is as safe as the CPU stages' (docs/robustness.md): a
// resumed run ends bit for bit where an uninterrupted one does, after a stop
// at an epoch's end, after Ctrl-C inside an epoch (at chosen steps in this
// process, and as a real SIGINT to bin/s04_train_*), and a diverging run stops
// within kLossCheckLag steps of its first NaN loss, naming it, with exit code 4.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "04_cuda_matmul/mlp_step.hpp"
#include "common/gpu/gpu_engine.hpp"
#include "gpu_testkit.hpp"
#include "trainer_safety.hpp"

using namespace course;
using namespace course::trainer_safety;

namespace {

const StageInfo kStage{"04_cuda_matmul", "Stage 04 (test)"};

// The trainer binary of this test binary's track, on a model big enough, in
// batches small enough, that an epoch of the synthetic set (8000 examples, 1000
// steps of 8) lasts long enough for a signal from outside to land inside it.
TrainerBinary trainer() {
  return {trainer_process::bin_dir() / ("s04_train_" + trainer_process::track()),
          {"--dataset", "synthetic", "--layers", "784,1024,1024,10", "--batch", "8"},
          {}};
}

#define REQUIRE_TRAINER(t)                                                              \
  SKIP_WITHOUT_GPU();                                                                   \
  if (!std::filesystem::exists((t).exe))                                                \
  GTEST_SKIP() << (t).exe << " is not built (build its target to run this test)"

std::filesystem::path dir() { return trainer_process::fresh_dir("course_s04_safety"); }

}  // namespace

TEST(Stage04_Safety, ResumeAfterAnEpochEqualsUninterruptedBitForBit) {
  const TrainerBinary t = trainer();
  REQUIRE_TRAINER(t);
  expect_resume_after_an_epoch_equals_uninterrupted(t, dir(), 3);
}

// 600 examples in batches of 32: 19 steps an epoch, the last of 24 examples.
// Stopped during step 3, the last step but one of epoch 1, and step 5 of epoch 2.
TEST(Stage04_Safety, CtrlCInsideAnEpochThenResumeEqualsUninterruptedBitForBit) {
  SKIP_WITHOUT_GPU();
  expect_ctrl_c_at_steps_then_resume_equals_uninterrupted(
      kStage, [](const EngineConfig& c) { return std::make_unique<GpuEngine>(c, std::make_unique<MlpStep>(c)); },
      {"--dataset", "synthetic", "--limit", "600", "--batch", "32", "--layers", "784,64,10"}, 3, {3, 18, 24}, dir());
}

TEST(Stage04_Safety, RealSigintInsideAnEpochThenResumeEqualsUninterruptedBitForBit) {
  const TrainerBinary t = trainer();
  REQUIRE_TRAINER(t);
  expect_sigint_inside_an_epoch_then_resume_equals_uninterrupted(t, dir());
}

TEST(Stage04_Safety, HugeLearningRateStopsWithExitCode4WithinTheLag) {
  const TrainerBinary t = trainer();
  REQUIRE_TRAINER(t);
  expect_huge_learning_rate_stops_with_exit_code_4(t, dir());
}

TEST(Stage04_Safety, TheFirstNonFiniteStepIsNamed) {
  SKIP_WITHOUT_GPU();
  EngineConfig cfg;
  cfg.arch = parse_arch(named_model_spec("mlp"));  // at a rate of 1e6 its activations overflow within a few steps
  cfg.input = {1, 28, 28};
  cfg.batch = 32;
  cfg.lr = 1e6;
  expect_first_bad_step_named([&] { return std::make_unique<GpuEngine>(cfg, std::make_unique<MlpStep>(cfg)); },
                              make_synthetic(2000, cfg.input, 10, 5));
}
