// Every GPU stage's trainer is as safe as the CPU stages' (docs/robustness.md),
// one suite over the rows of gpu_stage_table.hpp: a resumed run ends bit for bit
// where an uninterrupted one does, after a stop at an epoch's end, after Ctrl-C
// inside an epoch (at chosen steps in this process, with each of the stage's
// engines, and as a real SIGINT to bin/sNN_train_*), and a diverging run stops
// within kLossCheckLag steps of its first NaN loss, naming it, with exit code 4.
// The checks are tests/support/trainer_safety.hpp's; a test's name ends with
// its stage (GpuStages/GpuTrainer_Safety.<check>/Stage06).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/gpu/cuda_check.hpp"
#include "gpu_stage_table.hpp"
#include "trainer_safety.hpp"

using namespace course;
using namespace course::trainer_safety;
using course::gpu_stages::GpuStage;

namespace {

class GpuTrainer_Safety : public ::testing::TestWithParam<GpuStage> {
 protected:
  void SetUp() override {
    std::string why;
    if (!gpu_available(&why)) GTEST_SKIP() << why;
  }
  const GpuStage& stage() const { return GetParam(); }
  // The trainer binary, for the tests that run it: they skip when it is not built.
  const TrainerBinary& trainer() const { return stage().trainer; }
  bool trainer_built() const { return std::filesystem::exists(trainer().exe); }
  static std::filesystem::path dir() { return trainer_process::fresh_dir("course_gpu_safety"); }
};

#define REQUIRE_TRAINER() \
  if (!trainer_built()) GTEST_SKIP() << trainer().exe << " is not built (build its target to run this test)"

}  // namespace

TEST_P(GpuTrainer_Safety, ResumeAfterAnEpochEqualsUninterruptedBitForBit) {
  REQUIRE_TRAINER();
  expect_resume_after_an_epoch_equals_uninterrupted(trainer(), dir(), 3);
}

// Stopped during step 3, the last step but one of epoch 1, and step 5 of epoch 2
// (19 steps an epoch), with each engine of the stage.
TEST_P(GpuTrainer_Safety, CtrlCInsideAnEpochThenResumeEqualsUninterruptedBitForBit) {
  const std::filesystem::path base = dir();  // a folder per engine in it, each kept for its logs
  for (const auto& engine : stage().engines) {
    SCOPED_TRACE("with " + engine.what);
    const std::filesystem::path variant = base / engine.what;
    std::filesystem::create_directories(variant);
    expect_ctrl_c_at_steps_then_resume_equals_uninterrupted(stage().info, engine.make, stage().in_process_args, 3,
                                                            {3, 18, 24}, variant);
  }
}

TEST_P(GpuTrainer_Safety, RealSigintInsideAnEpochThenResumeEqualsUninterruptedBitForBit) {
  REQUIRE_TRAINER();
  expect_sigint_inside_an_epoch_then_resume_equals_uninterrupted(trainer(), dir());
}

// The one-off costs (the set's upload, each batch size's setup, a pass of each, the capture) are
// paid before epoch 1 and timed apart: a "setup" line before it, and "setup" in the --json file.
TEST_P(GpuTrainer_Safety, SetupIsPaidBeforeTheFirstEpochAndTimedApart) {
  REQUIRE_TRAINER();
  const std::filesystem::path d = dir();
  const std::string json_path = (d / "run.json").string();
  const auto r = trainer_process::run(trainer().exe, d, "setup", with(trainer().args, {"--epochs", "1", "--json",
                                                                                      json_path}));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const std::size_t setup = r.out.find("setup "), first_epoch = r.out.find("epoch 1/");
  ASSERT_NE(setup, std::string::npos) << r.out;
  EXPECT_LT(setup, first_epoch) << r.out;
  std::ifstream in(json_path);
  const nlohmann::json j = nlohmann::json::parse(in);
  ASSERT_TRUE(j.contains("setup")) << j.dump(2);
  EXPECT_GT(j.at("setup").at("seconds").get<double>(), 0.0);
  EXPECT_NE(j.at("setup").at("what").get<std::string>().find("uploaded"), std::string::npos) << j.dump(2);
}

TEST_P(GpuTrainer_Safety, HugeLearningRateStopsWithExitCode4WithinTheLag) {
  REQUIRE_TRAINER();
  TrainerBinary t = trainer();
  t.args = stage().diverging_args;
  expect_huge_learning_rate_stops_with_exit_code_4(t, dir());
}

// The `mlp` at a rate of 1e6: its activations overflow within a few steps.
TEST_P(GpuTrainer_Safety, TheFirstNonFiniteStepIsNamed) {
  EngineConfig cfg;
  cfg.arch = parse_arch(named_model_spec("mlp"));
  cfg.input = {1, 28, 28};
  cfg.batch = 32;
  cfg.lr = 1e6;
  stage().expect_first_bad_step_named(cfg, make_synthetic(2000, cfg.input, 10, 5));
}

INSTANTIATE_TEST_SUITE_P(GpuStages, GpuTrainer_Safety, ::testing::ValuesIn(gpu_stages::gpu_stages()),
                         [](const ::testing::TestParamInfo<GpuStage>& info) { return info.param.name; });
