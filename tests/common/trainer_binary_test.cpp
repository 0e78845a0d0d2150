// The real stage 01 trainer (bin/s01_train_solution, built next to this test)
// run as a learner runs it: resume equals an uninterrupted run bit for bit, a
// real SIGINT mid-run saves a checkpoint that resumes to the same bits, and a
// huge learning rate stops with the divergence message.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/model/model_file.hpp"
#include "expect_contains.hpp"
#include "trainer_process.hpp"

namespace course {
namespace {

namespace fs = std::filesystem;
using namespace trainer_process;

fs::path trainer() { return bin_dir() / "s01_train_solution"; }

fs::path binary_run_dir() { return trainer_process::fresh_dir("course_binary"); }

Finished run_trainer_binary(const fs::path& dir, const std::string& name, const std::vector<std::string>& args) {
  return run(trainer(), dir, name, args);
}

// The same small run every test starts from: a small MLP (784-64-10), so that
// the test stays binary_args under the sanitizers too.
std::vector<std::string> binary_args(int epochs, std::vector<std::string> more = {}) {
  std::vector<std::string> args = {"--dataset", "synthetic", "--limit", "600", "--batch", "32", "--layers",
                                   "784,64,10", "--epochs", std::to_string(epochs), "--no-progress"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

#define REQUIRE_TRAINER()                                                                       \
  if (!fs::exists(trainer()))                                                                   \
  GTEST_SKIP() << trainer() << " is not built (build the target s01_train_solution to run this test)"

// Checks a run that should have checkpointed; a stage 01 engine without
// get_optimizer_state() says "cannot checkpoint", which is a failure here.
void expect_ok(const Finished& f, const std::string& what) {
  EXPECT_EQ(f.code, 0) << what << "\n" << f.out << f.err;
  EXPECT_EQ(f.err.find("cannot checkpoint"), std::string::npos)
      << "stage 01's CpuEngine must expose its SGD velocities (Engine::get_optimizer_state) for checkpoints";
}

// The model file `got` holds the bits of `want`, which a run must have written.
void expect_same_model_files(const std::string& want, const std::string& got, const std::string& why = "") {
  const std::string a = slurp(want), b = slurp(got);
  ASSERT_FALSE(a.empty());
  EXPECT_TRUE(a == b) << "the model files differ" << why;
}

// One epoch, then resumed up to three. Under any schedule the first epoch's
// rate is --lr itself, so this equals three epochs in one go.
TEST(Stage01TrainerBinary, ResumeEqualsUninterruptedBitForBit) {
  REQUIRE_TRAINER();
  const fs::path dir = binary_run_dir();
  const std::string want = (dir / "uninterrupted.bin").string(), got = (dir / "resumed.bin").string();
  const std::string ckpt = (dir / "run.ckpt").string();
  expect_ok(run_trainer_binary(dir, "whole", binary_args(3, {"--save", want})), "uninterrupted run");
  expect_ok(run_trainer_binary(dir, "first", binary_args(1, {"--checkpoint-every", "1", "--checkpoint", ckpt})),
            "first epoch");
  const Finished resumed = run_trainer_binary(dir, "rest", binary_args(3, {"--resume", ckpt, "--save", got}));
  expect_ok(resumed, "resumed run");
  EXPECT_CONTAINS(resumed.out, "resumed " + ckpt + " after epoch 1");
  expect_same_model_files(want, got, ": resume did not continue the run bit for bit");
}

// --epochs 0 --save writes the initial weights of the seed: training one epoch
// from that file ends on the bits of a run that started from the seed itself,
// and another seed writes other weights.
TEST(Stage01TrainerBinary, ZeroEpochsSavesTheInitialWeights) {
  REQUIRE_TRAINER();
  const fs::path dir = binary_run_dir();
  const std::string init = (dir / "init.bin").string(), other = (dir / "other.bin").string();
  const std::string from_file = (dir / "from_file.bin").string(), from_seed = (dir / "from_seed.bin").string();
  const Finished zero = run_trainer_binary(dir, "init", binary_args(0, {"--save", init}));
  expect_ok(zero, "--epochs 0 --save");
  EXPECT_CONTAINS(zero.out, "--epochs 0: nothing trained; the figures below are those of the initial weights of seed 42");
  EXPECT_EQ(zero.out.find("epoch 1/"), std::string::npos) << "no epoch may run";
  expect_ok(run_trainer_binary(dir, "other", binary_args(0, {"--seed", "7", "--save", other})), "another seed");
  expect_ok(run_trainer_binary(dir, "file", binary_args(1, {"--load", init, "--save", from_file})), "from the file");
  expect_ok(run_trainer_binary(dir, "seed", binary_args(1, {"--save", from_seed})), "from the seed");
  ASSERT_FALSE(slurp(init).empty());
  EXPECT_NE(slurp(init), slurp(other)) << "seeds 42 and 7 wrote the same weights";
  EXPECT_NE(slurp(init), slurp(from_seed)) << "one epoch did not change the weights";
  EXPECT_TRUE(slurp(from_file) == slurp(from_seed))
      << "one epoch from the --epochs 0 file differs from one epoch from the seed: the file is not the initial weights";
  const Finished refused = run_trainer_binary(dir, "refused", binary_args(0));
  EXPECT_EQ(refused.code, 2) << "--epochs 0 without --save";
  EXPECT_CONTAINS(refused.err, "0 is allowed only with --save FILE");
}

// A real SIGINT while the trainer runs: it stops after the current step with
// exit code 130 and a checkpoint that resumes to the bits of a run never stopped.
TEST(Stage01TrainerBinary, SigintThenResumeEqualsUninterruptedBitForBit) {
  REQUIRE_TRAINER();
  const fs::path dir = binary_run_dir();
  const std::string ckpt = (dir / "run.ckpt").string(), json_path = (dir / "run.json").string();
  // Every run has the same --epochs, so a schedule over the run gives them the same rates.
  const int epochs = 4;
  const Process p =
      start(trainer(), dir, "long", binary_args(epochs, {"--limit", "2000", "--checkpoint-every", "1", "--checkpoint", ckpt, "--json",
                                        json_path}));
  ASSERT_GT(p.pid, 0);
  // The first checkpoint appears after epoch 1: the handler is in place by then.
  if (!wait_until(p, [&] { return fs::exists(ckpt); }, std::chrono::minutes(5))) {
    const Finished early = wait_for(p);
    FAIL() << "no checkpoint: the trainer ended (exit " << early.code << ") or took 5 minutes:\n" << early.out
           << early.err;
  }
  kill(p.pid, SIGINT);
  const Finished stopped = wait_for(p);
  ASSERT_EQ(stopped.code, 130) << stopped.out << stopped.err;
  EXPECT_CONTAINS(stopped.err, "stopped by Ctrl-C after ");
  EXPECT_CONTAINS(stopped.err, "continue with: ");
  std::ifstream in(json_path);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["status"], "interrupted");
  const int epoch = j["stopped_at"]["epoch"].get<int>(), step = j["stopped_at"]["step"].get<int>();
  SCOPED_TRACE("stopped at epoch " + std::to_string(epoch) + ", step " + std::to_string(step));

  const std::string want = (dir / "uninterrupted.bin").string(), got = (dir / "resumed.bin").string();
  expect_ok(run_trainer_binary(dir, "rest", binary_args(epochs, {"--limit", "2000", "--resume", ckpt, "--save", got})),
            "resumed run");
  expect_ok(run_trainer_binary(dir, "whole", binary_args(epochs, {"--limit", "2000", "--save", want})), "uninterrupted run");
  expect_same_model_files(want, got);
}

TEST(Stage01TrainerBinary, HugeLearningRateStopsWithTheDivergenceMessage) {
  REQUIRE_TRAINER();
  const fs::path dir = binary_run_dir();
  // The named MLP (784-256-128-10): at this rate its loss is NaN within a few steps.
  const Finished f = run_trainer_binary(dir, "diverge", {"--dataset", "synthetic", "--limit", "600", "--model", "mlp",
                                                         "--epochs", "3", "--lr", "1e6", "--no-progress"});
  EXPECT_EQ(f.code, 4) << f.out << f.err;
  EXPECT_CONTAINS(f.err, "at epoch 1, step ");
  EXPECT_CONTAINS(f.err, "the run diverged; try a smaller --lr, e.g. 0.02 (the default) (now 1e+06)");
}

// The thesis's input shape on the real engine: --resize and --channels make
// 3x14x14 examples of the 1x28x28 set (an MLP of 588 inputs), and
// --val-fraction adds the held-out set to every epoch line and to the JSON.
TEST(Stage01TrainerBinary, ResizedThreeChannelInputsAndAValidationSet) {
  REQUIRE_TRAINER();
  const fs::path dir = binary_run_dir();
  const std::string json = (dir / "run.json").string();
  const Finished f = run_trainer_binary(
      dir, "reshaped",
      {"--dataset", "synthetic", "--limit", "600", "--batch", "32", "--layers", "588,32,10", "--epochs", "2",
       "--resize", "14", "--channels", "3", "--val-fraction", "0.1", "--json", json, "--no-progress"});
  ASSERT_EQ(f.code, 0) << f.out << f.err;
  EXPECT_CONTAINS(f.out, "resized 28x28 -> 14x14 (bilinear), 1 -> 3 channels; 60 of the 600 training examples held out");
  EXPECT_CONTAINS(f.out, "540 train, 60 val, 2000 test, 3x14x14");
  EXPECT_CONTAINS(f.out, "  val loss ");
  const nlohmann::json j = nlohmann::json::parse(slurp(json));
  ASSERT_EQ(j["epochs"].size(), 2u);
  const double val = j["epochs"][1]["val_accuracy"].get<double>();
  EXPECT_GT(val, 0.5) << "the synthetic set is easy: the held-out examples are learnt too";
  EXPECT_LE(val, 1.0);
  EXPECT_GT(j["epochs"][1]["val_loss"].get<double>(), 0.0);
}

// Stage 01 has dense layers only: its --help offers no CNN and no conv layer, and a CNN's model file is
// refused as a model it cannot run, not with advice to pass that model's --model/--arch.
TEST(Stage01TrainerBinary, OffersAndAdvisesOnlyWhatItRuns) {
  REQUIRE_TRAINER();
  const fs::path dir = binary_run_dir();
  const Finished help = run_trainer_binary(dir, "help", {"--help"});
  ASSERT_EQ(help.code, 0) << help.err;
  EXPECT_CONTAINS(help.out, "{mlp}");
  for (const char* refused : {"cnn", "conv", "pool"})
    EXPECT_EQ(help.out.find(refused), std::string::npos) << "--help offers '" << refused << "':\n" << help.out;

  // A CNN's model file as stage 02 writes it (the refusal comes before its tensors are looked at).
  ModelFile cnn;
  cnn.arch = "conv8k5,relu,pool2,flatten,fc10";
  cnn.input = Shape3{1, 28, 28};
  cnn.classes = 10;
  cnn.stage = "02_conv_pool";
  cnn.tensors.push_back({"conv1.weight", Tensor(std::vector<int>{8, 1, 5, 5})});
  const std::string file = (dir / "cnn.bin").string();
  save_model(file, cnn);
  const Finished load = run_trainer_binary(dir, "load", {"--dataset", "synthetic", "--load", file, "--evaluate",
                                                         "--no-progress"});
  EXPECT_EQ(load.code, 1) << load.out << load.err;
  EXPECT_CONTAINS(load.err, "which stage 01_fc_softmax cannot run: it has conv, pool and flatten layers");
  EXPECT_EQ(load.err.find("pass the --model"), std::string::npos) << load.err;
}

}  // namespace
}  // namespace course
