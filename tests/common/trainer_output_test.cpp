// The practice's network through the shared trainer: --output sigmoid (with --loss mse
// only), --leaky-slope, the MAE per epoch, and model files that carry both in their
// spec. A fake engine with canned numbers, as in trainer_test.cpp: the trainer's
// plumbing is what is checked here (the stages' numbers have their own tests).
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "common/model/arch.hpp"
#include "common/train/trainer.hpp"
#include "expect_contains.hpp"
#include "trainer_process.hpp"
#include "trainer_run.hpp"

namespace course {
namespace {

namespace fs = std::filesystem;


struct SeenConfig {
  EngineConfig config;
  int built = 0;
};

// Training: loss 0.1, 50% right and an absolute error of 0.2 per example; evaluation:
// loss 0.05, every label right and an absolute error of 0.3 per example.
class MaeEngine : public Engine {
 public:
  MaeEngine(const EngineConfig& config, bool computes_mae) : config_(config), computes_mae_(computes_mae) {}
  std::string device() const override { return "fake device"; }
  void set_learning_rate(double) override {}
  EpochStats train_epoch(const Dataset& train, int, const BatchCallback& on_batch) override {
    EpochStats s;
    s.seen = train.size();
    s.loss_sum = 0.1 * s.seen;
    s.correct = s.seen / 2;
    s.abs_error_sum = computes_mae_ ? 0.2 * s.seen : 0.0;
    if (on_batch) on_batch(s.seen, s.loss_sum);
    return s;
  }
  EpochStats evaluate(const Dataset& data, std::vector<int>* predictions) override {
    EpochStats s;
    s.seen = data.size();
    s.loss_sum = 0.05 * s.seen;
    s.correct = s.seen;
    s.abs_error_sum = computes_mae_ ? 0.3 * s.seen : 0.0;
    if (predictions) *predictions = data.labels;
    return s;
  }
  std::vector<NamedTensor> get_parameters() override { return {{"fc1.weight", Tensor({2, 3}, 1.0f)}}; }
  void set_parameters(const std::vector<NamedTensor>&) override {}
  bool reports_mae() const override { return computes_mae_; }

 private:
  EngineConfig config_;
  bool computes_mae_;
};

EngineFactory factory(SeenConfig* seen, bool computes_mae = true) {
  return [seen, computes_mae](const EngineConfig& config) -> std::unique_ptr<Engine> {
    ++seen->built;
    seen->config = config;
    return std::make_unique<MaeEngine>(config, computes_mae);
  };
}

using trainer_run::RunResult;

RunResult run_small(std::vector<std::string> args, const EngineFactory& make) {
  std::vector<std::string> all = {"s01_train", "--dataset", "synthetic", "--limit", "100", "--epochs", "2",
                                  "--no-progress"};
  all.insert(all.end(), args.begin(), args.end());
  return trainer_run::run_in_process(trainer_run::kStage01, make, std::move(all));
}

fs::path output_run_dir() { return trainer_process::fresh_dir("course_output"); }

using trainer_process::read_json;

TEST(TrainerOutput, SigmoidOutputNeedsMse) {
  SeenConfig seen;
  const RunResult r = run_small({"--output", "sigmoid"}, factory(&seen));
  EXPECT_EQ(r.code, 2) << "a usage error";
  EXPECT_CONTAINS(r.err, "--output sigmoid needs --loss mse");
  EXPECT_CONTAINS(r.err, "--loss cross-entropy");
  EXPECT_EQ(seen.built, 0) << "refused before any data is loaded or engine built";

  // The same network written as a spec: refused once the spec is read.
  const RunResult spec = run_small({"--arch", "fc32,relu,fc10,sigmoid"}, factory(&seen));
  EXPECT_EQ(spec.code, 2) << spec.err;
  EXPECT_CONTAINS(spec.err, "needs --loss mse");

  const RunResult bad = run_small({"--output", "softmax", "--loss", "mse"}, factory(&seen));
  EXPECT_EQ(bad.code, 2);
  EXPECT_CONTAINS(bad.err, "--output");
}

TEST(TrainerOutput, SigmoidOutputEndsTheSpecTheEngineBuilds) {
  SeenConfig seen;
  const RunResult r = run_small({"--layers", "784,32,10", "--output", "sigmoid", "--loss", "mse"}, factory(&seen));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(seen.config.arch.spec(), "fc32,relu,fc10,sigmoid");
  ASSERT_TRUE(output_activation(seen.config.arch).has_value());
  EXPECT_EQ(*output_activation(seen.config.arch), Activation::Sigmoid);
  EXPECT_EQ(seen.config.loss, "mse");
  EXPECT_CONTAINS(r.out, "fc32,relu,fc10,sigmoid (25450 parameters)") << "the sigmoid adds no parameter";

  // A named model gets it after its last layer, sized to the classes.
  ASSERT_EQ(run_small({"--model", "mlp", "--output", "sigmoid", "--loss", "mse"}, factory(&seen)).code, 0);
  EXPECT_EQ(seen.config.arch.spec(), "fc256,relu,fc128,relu,fc10,sigmoid");
  // Twice is once too many.
  const RunResult twice = run_small({"--arch", "fc10,sigmoid", "--output", "sigmoid", "--loss", "mse"}, factory(&seen));
  EXPECT_EQ(twice.code, 2);
  EXPECT_CONTAINS(twice.err, "ends with sigmoid already");
}

TEST(TrainerOutput, MaeEveryEpochWithMse) {
  const fs::path dir = output_run_dir();
  const fs::path json_path = dir / "run.json";
  SeenConfig seen;
  const RunResult r = run_small({"--loss", "mse", "--output", "sigmoid", "--val-fraction", "0.2", "--json",
                           json_path.string()},
                          factory(&seen));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const std::regex line(
      R"(epoch 2/2  loss 0\.1000  MAE 0\.2000  train 50\.00%  val loss 0\.0500  val MAE 0\.3000  val 100\.00%  )"
      R"(test MAE 0\.3000  test 100\.00%  [0-9.]+ s)");
  EXPECT_TRUE(std::regex_search(r.out, line)) << r.out;
  const nlohmann::json j = read_json(json_path);
  ASSERT_EQ(j["epochs"].size(), 2u);
  for (const auto& e : j["epochs"]) {
    EXPECT_DOUBLE_EQ(e["train_mae"].get<double>(), 0.2);
    EXPECT_DOUBLE_EQ(e["test_mae"].get<double>(), 0.3);
    EXPECT_DOUBLE_EQ(e["val_mae"].get<double>(), 0.3);
  }
  EXPECT_EQ(j["options"]["output"], "sigmoid");

  // Cross-entropy: no MAE anywhere.
  const fs::path ce_json = dir / "ce.json";
  const RunResult ce = run_small({"--json", ce_json.string()}, factory(&seen));
  ASSERT_EQ(ce.code, 0) << ce.err;
  EXPECT_EQ(ce.out.find("MAE"), std::string::npos) << ce.out;
  EXPECT_FALSE(read_json(ce_json)["epochs"][0].contains("test_mae"));
}

TEST(TrainerOutput, AnEngineWithoutMaeSaysSo) {
  const fs::path dir = output_run_dir();
  SeenConfig seen;
  const RunResult r = run_small({"--loss", "mse", "--json", (dir / "run.json").string()}, factory(&seen, false));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "does not compute the mean absolute error");
  EXPECT_EQ(r.out.find("test MAE"), std::string::npos) << r.out;
  EXPECT_FALSE(read_json(dir / "run.json")["epochs"][0].contains("train_mae"));
}

TEST(TrainerOutput, LeakySlopeGoesIntoTheSpec) {
  SeenConfig seen;
  ASSERT_EQ(run_small({"--layers", "784,32,16,10", "--activation", "leaky", "--leaky-slope", "0.1"}, factory(&seen)).code, 0);
  EXPECT_EQ(seen.config.arch.spec(), "fc32,leaky0.1,fc16,leaky0.1,fc10");
  EXPECT_DOUBLE_EQ(seen.config.arch.layers[1].slope, 0.1);

  // The default slope is not written: specs and model files of earlier runs stay as they were.
  ASSERT_EQ(run_small({"--layers", "784,32,10", "--activation", "leaky"}, factory(&seen)).code, 0);
  EXPECT_EQ(seen.config.arch.spec(), "fc32,leaky,fc10");

  // A spec may carry its own slope, and --leaky-slope may not contradict it.
  ASSERT_EQ(run_small({"--arch", "fc32,leaky0.2,fc10"}, factory(&seen)).code, 0);
  EXPECT_DOUBLE_EQ(seen.config.arch.layers[1].slope, 0.2);
  const RunResult both = run_small({"--arch", "fc32,leaky0.2,fc10", "--leaky-slope", "0.1"}, factory(&seen));
  EXPECT_EQ(both.code, 2);
  EXPECT_CONTAINS(both.err, "name two slopes");

  for (const char* bad : {"0", "1", "-0.1", "1.5", "abc"}) {
    const RunResult r = run_small({"--activation", "leaky", "--leaky-slope", bad}, factory(&seen));
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_CONTAINS(r.err, "--leaky-slope");
  }

  // A slope with no leaky ReLU to act on is a warning, not an error.
  const RunResult unused = run_small({"--leaky-slope", "0.1"}, factory(&seen));
  EXPECT_EQ(unused.code, 0);
  EXPECT_CONTAINS(unused.err, "--leaky-slope 0.1 has no leaky ReLU to act on");
}

// An output activation and a slope are part of the architecture: a model saved with
// them does not load into a run without them, and the message says which flags matter.
TEST(TrainerOutput, ModelFilesCarryTheOutputAndTheSlope) {
  const fs::path dir = output_run_dir();
  const std::string model = (dir / "practice.model").string();
  SeenConfig seen;
  const std::vector<std::string> practice = {"--layers", "784,16,10", "--activation", "leaky", "--leaky-slope", "0.1",
                                             "--output", "sigmoid", "--loss", "mse"};
  std::vector<std::string> save = practice;
  save.insert(save.end(), {"--save", model});
  ASSERT_EQ(run_small(save, factory(&seen)).code, 0);

  std::vector<std::string> load = practice;
  load.insert(load.end(), {"--load", model, "--evaluate"});
  const RunResult same = run_small(load, factory(&seen));
  EXPECT_EQ(same.code, 0) << same.err;
  EXPECT_CONTAINS(same.out, "test MAE 0.3000");

  const RunResult no_output =
      run_small({"--layers", "784,16,10", "--activation", "leaky", "--leaky-slope", "0.1", "--loss", "mse", "--load", model,
           "--evaluate"},
          factory(&seen));
  EXPECT_EQ(no_output.code, 1);
  EXPECT_CONTAINS(no_output.err, "holds architecture 'fc16,leaky0.1,fc10,sigmoid'");
  EXPECT_CONTAINS(no_output.err, "this run builds 'fc16,leaky0.1,fc10'");
  EXPECT_CONTAINS(no_output.err, "--output");

  const RunResult other_slope = run_small({"--layers", "784,16,10", "--activation", "leaky", "--output", "sigmoid", "--loss",
                                     "mse", "--load", model, "--evaluate"},
                                    factory(&seen));
  EXPECT_EQ(other_slope.code, 1);
  EXPECT_CONTAINS(other_slope.err, "this run builds 'fc16,leaky,fc10,sigmoid'");
}

}  // namespace
}  // namespace course
