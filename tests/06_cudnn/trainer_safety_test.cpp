// Stage 06's trainer is as safe as the CPU stages' (docs/robustness.md): a
// resumed run (running the conv algorithms its checkpoint recorded) ends bit
// for bit where an uninterrupted one does, after a stop at an epoch's end, after Ctrl-C inside an epoch (at chosen steps in this
// process, and as a real SIGINT to bin/s06_train_*), with the training step
// replayed as a CUDA graph; a diverging run stops within kLossCheckLag steps
// of its first NaN loss, naming it, with exit code 4; and --conv-algos
// fastest, whose runs differ in the last bits, says so when it checkpoints.
#include <gtest/gtest.h>

#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "06_cudnn/cudnn_engine.hpp"
#include "s06_support.hpp"
#include "trainer_safety.hpp"

using namespace course;
using namespace course::trainer_safety;

namespace {

const StageInfo kStage{"06_cudnn", "Stage 06 (test)"};

// The conv algorithms a run chose, from its --verbose report ("conv1 (conv16k3p1),
// batch 32: forward FFT 0.012 ms, ..."), without the measured times.
std::string chosen_algorithms(const std::string& out) {
  std::string chosen;
  const std::regex line("conv[0-9]+ \\([^)]*\\), batch [0-9]+: .*");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), line); it != std::sregex_iterator(); ++it)
    chosen += std::regex_replace(it->str(), std::regex("[0-9.]+ ms"), "") + "\n";
  return chosen;
}

// The trainer binary of this test binary's track: the `cnn` on the synthetic set in
// small batches (8000 examples, 1000 steps of 8 an epoch, every one a graph replay),
// so that an epoch lasts long enough for a signal from outside to land inside it.
// cudnnFind times the algorithms under whatever else runs on the GPU (parallel
// ctest), so two runs may choose differently: the resumed run takes those its
// checkpoint recorded, and the uninterrupted run takes them with --conv-algos-from,
// and then every run compared does the same arithmetic and they must agree bit for bit.
TrainerBinary trainer() {
  return {trainer_process::bin_dir() / ("s06_train_" + trainer_process::track()),
          {"--dataset", "synthetic", "--model", "cnn", "--batch", "8", "--verbose"},
          chosen_algorithms,
          [](const std::string& checkpoint) { return std::vector<std::string>{"--conv-algos-from", checkpoint}; },
          "2 of 2 conv layers at batch 8 run the recorded algorithms (not measured again)"};
}

#define REQUIRE_TRAINER(t)                                                              \
  S06_SKIP_WITHOUT_GPU();                                                               \
  if (!std::filesystem::exists((t).exe))                                                \
  GTEST_SKIP() << (t).exe << " is not built (build its target to run this test)"

std::filesystem::path dir() { return trainer_process::fresh_dir("course_s06_safety"); }

}  // namespace

TEST(Stage06_Safety, ResumeAfterAnEpochEqualsUninterruptedBitForBit) {
  const TrainerBinary t = trainer();
  REQUIRE_TRAINER(t);
  expect_resume_after_an_epoch_equals_uninterrupted(t, dir(), 3);
}

// 600 examples in batches of 32: 19 steps an epoch, 18 of them graph replays and
// the last, of 24 examples, uncaptured. A resumed epoch trains a smaller data set,
// so its graph is captured anew.
TEST(Stage06_Safety, CtrlCInsideAnEpochThenResumeEqualsUninterruptedBitForBit) {
  S06_SKIP_WITHOUT_GPU();
  expect_ctrl_c_at_steps_then_resume_equals_uninterrupted(
      kStage, [](const EngineConfig& c) { return std::make_unique<CudnnEngine>(c); },
      {"--dataset", "synthetic", "--limit", "600", "--batch", "32", "--model", "cnn"}, 3, {3, 18, 24}, dir());
}

TEST(Stage06_Safety, RealSigintInsideAnEpochThenResumeEqualsUninterruptedBitForBit) {
  const TrainerBinary t = trainer();
  REQUIRE_TRAINER(t);
  expect_sigint_inside_an_epoch_then_resume_equals_uninterrupted(t, dir());
}

// The `mlp`: at a rate of 1e6 its activations overflow within a few steps. (The
// `cnn` may not diverge at all: its ReLUs can all die, and then only the last bias
// moves, by finite amounts; stage 02 on the CPU does that on 2000 synthetic examples.)
TEST(Stage06_Safety, HugeLearningRateStopsWithExitCode4WithinTheLag) {
  TrainerBinary t = trainer();
  REQUIRE_TRAINER(t);
  t.args = {"--dataset", "synthetic", "--model", "mlp", "--batch", "32"};
  expect_huge_learning_rate_stops_with_exit_code_4(t, dir());
}

TEST(Stage06_Safety, TheFirstNonFiniteStepIsNamed) {
  S06_SKIP_WITHOUT_GPU();
  EngineConfig cfg;
  cfg.arch = parse_arch(named_model_spec("mlp"));  // its activations overflow within a few steps (see above)
  cfg.input = {1, 28, 28};
  cfg.batch = 32;
  cfg.lr = 1e6;
  expect_first_bad_step_named([&] { return std::make_unique<CudnnEngine>(cfg); },
                              make_synthetic(2000, cfg.input, 10, 5));
}

TEST(Stage06_Safety, FastestAlgorithmsSayAResumeMatchesOnlyToRounding) {
  const TrainerBinary t = trainer();
  REQUIRE_TRAINER(t);
  const std::filesystem::path d = dir();
  const auto r = trainer_process::run(t.exe, d, "fastest",
                                      {"--dataset", "synthetic", "--limit", "256", "--model", "cnn", "--epochs", "1",
                                       "--conv-algos", "fastest", "--checkpoint-every", "1", "--checkpoint",
                                       (d / "run.ckpt").string(), "--no-progress"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("note: stage 06 with --conv-algos fastest may run cuDNN algorithms that add with atomics"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("only to rounding, not bit for bit"), std::string::npos) << r.err;
}
