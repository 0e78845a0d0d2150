// Stage 05's trainer is as safe as the CPU stages' (docs/robustness.md): a
// resumed run ends bit for bit where an uninterrupted one does, after a stop
// at an epoch's end, after Ctrl-C inside an epoch (at chosen steps in this
// process, and as a real SIGINT to bin/s05_train_*), and a diverging run stops
// within kLossCheckLag steps of its first NaN loss, naming it, with exit code 4.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "05_im2col_gemm/cnn_step.hpp"
#include "cnn_engine.hpp"
#include "common/gpu/gpu_engine.hpp"
#include "stage05_support.hpp"
#include "trainer_safety.hpp"

using namespace course;
using namespace course::trainer_safety;

namespace {

const StageInfo kStage{"05_im2col_gemm", "Stage 05 (test)"};

// The trainer binary of this test binary's track: the `cnn` on the synthetic set in
// small batches (8000 examples, 1000 steps of 8 an epoch), so that an epoch lasts long
// enough for a signal from outside to land inside it.
TrainerBinary trainer() {
  return {trainer_process::bin_dir() / ("s05_train_" + trainer_process::track()),
          {"--dataset", "synthetic", "--model", "cnn", "--batch", "8"},
          {}};
}

#define REQUIRE_TRAINER(t)                                                              \
  SKIP_WITHOUT_GPU();                                                                   \
  if (!std::filesystem::exists((t).exe))                                                \
  GTEST_SKIP() << (t).exe << " is not built (build its target to run this test)"

std::filesystem::path dir() { return trainer_process::fresh_dir("course_s05_safety"); }

}  // namespace

TEST(Stage05_Safety, ResumeAfterAnEpochEqualsUninterruptedBitForBit) {
  const TrainerBinary t = trainer();
  REQUIRE_TRAINER(t);
  expect_resume_after_an_epoch_equals_uninterrupted(t, dir(), 3);
}

// 600 examples in batches of 32: 19 steps an epoch, the last of 24 examples.
TEST(Stage05_Safety, CtrlCInsideAnEpochThenResumeEqualsUninterruptedBitForBit) {
  SKIP_WITHOUT_GPU();
  expect_ctrl_c_at_steps_then_resume_equals_uninterrupted(
      kStage, [](const EngineConfig& c) { return std::make_unique<GpuEngine>(c, std::make_unique<CnnStep>(c)); },
      {"--dataset", "synthetic", "--limit", "600", "--batch", "32", "--model", "cnn"}, 3, {3, 18, 24}, dir());
}

TEST(Stage05_Safety, RealSigintInsideAnEpochThenResumeEqualsUninterruptedBitForBit) {
  const TrainerBinary t = trainer();
  REQUIRE_TRAINER(t);
  expect_sigint_inside_an_epoch_then_resume_equals_uninterrupted(t, dir());
}

// The `mlp`: at a rate of 1e6 its activations overflow within a few steps. (The
// `cnn` may not diverge at all: its ReLUs can all die, and then only the last bias
// moves, by finite amounts; stage 02 on the CPU does that on 2000 synthetic examples.)
TEST(Stage05_Safety, HugeLearningRateStopsWithExitCode4WithinTheLag) {
  TrainerBinary t = trainer();
  REQUIRE_TRAINER(t);
  t.args = {"--dataset", "synthetic", "--model", "mlp", "--batch", "32"};
  expect_huge_learning_rate_stops_with_exit_code_4(t, dir());
}

TEST(Stage05_Safety, TheFirstNonFiniteStepIsNamed) {
  SKIP_WITHOUT_GPU();
  EngineConfig cfg;
  cfg.arch = parse_arch(named_model_spec("mlp"));  // its activations overflow within a few steps (see above)
  cfg.input = {1, 28, 28};
  cfg.batch = 32;
  cfg.lr = 1e6;
  expect_first_bad_step_named([&] { return std::make_unique<GpuEngine>(cfg, std::make_unique<CnnStep>(cfg)); },
                              make_synthetic(2000, cfg.input, 10, 5));
}
