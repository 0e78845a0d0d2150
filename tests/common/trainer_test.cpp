// Tests of common/train/trainer end to end, with a fake Engine defined here: the
// trainer's job is the plumbing (data, output, JSON, model files, exit
// codes), so canned numbers are enough to check every path.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/core/not_implemented.hpp"
#include "common/train/progress.hpp"
#include "common/train/trainer.hpp"
#include "expect_contains.hpp"
#include "trainer_process.hpp"
#include "trainer_run.hpp"

namespace course {
namespace {

namespace fs = std::filesystem;


enum class Mode { Normal, NaNLoss, InfLoss, NotImplementedInTraining, RuntimeError };

// What the fake engines saw, for the tests to check.
struct Record {
  int engines_built = 0;
  EngineConfig config;
  std::vector<int> epochs;  // epoch arguments of train_epoch, in order
  std::vector<double> step_rates;  // the learning rate each training step ran with, in order
  int evaluations = 0;
};

// A stand-in for a stage's engine. Training adds 1 to its single weight and
// reports a loss of 1 / (epoch + 1) and 80% right; evaluation predicts every
// label right when the weight is at least 1 (a trained or loaded model) and
// class 0 otherwise, so a test can tell a loaded model from a fresh one.
class FakeEngine : public Engine {
 public:
  FakeEngine(const EngineConfig& config, Mode mode, Record* record) : config_(config), mode_(mode), record_(record) {}

  std::string device() const override { return "fake device"; }
  void set_learning_rate(double lr) override { lr_ = lr; }

  EpochStats train_epoch(const Dataset& train, int epoch, const BatchCallback& on_batch) override {
    record_->epochs.push_back(epoch);
    if (mode_ == Mode::NotImplementedInTraining)
      throw NotImplemented("Task 1.3", "solutions/01_fc_softmax/dense.cpp", "docs/01_fc_softmax.md");
    if (mode_ == Mode::RuntimeError) throw std::runtime_error("the fake device caught fire");
    const long n = train.size();
    const double per_example = mode_ == Mode::NaNLoss   ? std::nan("")
                               : mode_ == Mode::InfLoss ? HUGE_VAL
                                                        : 1.0 / (epoch + 1);
    for (long done = config_.batch; done < n + config_.batch; done += config_.batch) {
      const long d = std::min(done, n);
      record_->step_rates.push_back(lr_);
      if (on_batch) on_batch(d, per_example * static_cast<double>(d));
    }
    weight_ += 1.0f;
    EpochStats s;
    s.seen = n;
    s.loss_sum = per_example * static_cast<double>(n);
    s.correct = n * 8 / 10;
    return s;
  }

  EpochStats evaluate(const Dataset& data, std::vector<int>* predictions) override {
    ++record_->evaluations;
    EpochStats s;
    if (predictions) predictions->clear();
    for (int i = 0; i < data.size(); ++i) {
      const int label = data.labels[static_cast<std::size_t>(i)];
      const int p = weight_ >= 1.0f ? label : 0;
      if (predictions) predictions->push_back(p);
      s.correct += p == label;
      s.loss_sum += 0.5;
      ++s.seen;
    }
    return s;
  }

  std::vector<NamedTensor> get_parameters() override {
    return {{"fc1.weight", Tensor({2, 3}, weight_)}, {"fc1.bias", Tensor({2}, 0.5f)}};
  }

  void set_parameters(const std::vector<NamedTensor>& params) override { weight_ = params.at(0).tensor[0]; }

  std::vector<LayerTime> layer_times() const override {
    if (!config_.profile) return {};
    return {{"fc1 (fc256)", 30.0, 60.0, 4}, {"fc2 (fc10)", 10.0, 0.0, 4}};
  }

 private:
  EngineConfig config_;
  Mode mode_;
  Record* record_;
  float weight_ = 0.0f;
  double lr_ = std::nan("");  // the rate the trainer set last
};

EngineFactory fake_factory(Record* record, Mode mode = Mode::Normal) {
  return [record, mode](const EngineConfig& config) -> std::unique_ptr<Engine> {
    ++record->engines_built;
    record->config = config;
    return std::make_unique<FakeEngine>(config, mode, record);
  };
}

using trainer_run::RunResult;

using trainer_run::run_as_stage01;

// The quick run every test starts from.
std::vector<std::string> quick(std::vector<std::string> more = {}) {
  std::vector<std::string> args = {"--dataset", "synthetic", "--limit", "200", "--epochs", "2", "--no-progress"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

fs::path trainer_run_dir() { return trainer_process::fresh_dir("course_trainer"); }

// The quick run of a fake engine, saved to `model`: the file the tests of --load start from.
void save_trained_model(const std::string& model) {
  Record trained;
  ASSERT_EQ(run_as_stage01(quick({"--save", model}), fake_factory(&trained)).code, 0);
}

using trainer_process::read_json;

TEST(Trainer, TrainsAndPrintsWhatAPersonWants) {
  Record rec;
  const RunResult r = run_as_stage01(quick(), fake_factory(&rec));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(rec.engines_built, 1);
  EXPECT_EQ(rec.epochs, (std::vector<int>{0, 1})) << "epochs are passed 0-based, as epoch_order takes them";
  // Header: stage, device, model spec, data, hyper-parameters.
  EXPECT_CONTAINS(r.out, "01_fc_softmax | fake device | mlp fc256,relu,fc128,relu,fc10 (235146 parameters)");
  EXPECT_CONTAINS(r.out, "batch 64  lr 0.02 cosine  momentum 0.9  seed 42");
  EXPECT_CONTAINS(r.out, "data: synthetic");
  // One line per epoch.
  const std::regex line1(R"(epoch 1/2  loss 1\.0000  train 80\.00%  test 100\.00%  [0-9.]+ s  [0-9]+ img/s)");
  const std::regex line2(R"(epoch 2/2  loss 0\.5000  train 80\.00%  test 100\.00%  [0-9.]+ s  [0-9]+ img/s)");
  EXPECT_TRUE(std::regex_search(r.out, line1)) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, line2)) << r.out;
  EXPECT_EQ(r.out.find("test eval"), std::string::npos) << "evaluation time only with --verbose";
  // The final report.
  EXPECT_CONTAINS(r.out, "final test accuracy 100.00% (2000 of 2000)");
  EXPECT_CONTAINS(r.out, "macro avg");
  EXPECT_CONTAINS(r.out, "confusion matrix");
  EXPECT_EQ(r.err, "") << "a run on the synthetic set it asked for warns about nothing";
}

TEST(Trainer, PassesTheConfigToTheEngine) {
  Record rec;
  ASSERT_EQ(run_as_stage01(quick({"--batch", "16", "--lr", "0.2", "--momentum", "0.5", "--seed", "9", "--loss", "mse",
                       "--arch", "conv4k3p1,relu,pool2,flatten,fc10"}),
                fake_factory(&rec))
                .code,
            0);
  EXPECT_EQ(rec.config.arch.spec(), "conv4k3p1,relu,pool2,flatten,fc10");
  EXPECT_EQ(rec.config.input, (Shape3{1, 28, 28}));
  EXPECT_EQ(rec.config.classes, 10);
  EXPECT_EQ(rec.config.batch, 16);
  EXPECT_DOUBLE_EQ(rec.config.lr, 0.2);
  EXPECT_DOUBLE_EQ(rec.config.momentum, 0.5);
  EXPECT_EQ(rec.config.seed, 9u);
  EXPECT_EQ(rec.config.loss, "mse");
  EXPECT_EQ(rec.config.threads, 1) << "a stage without --threads runs one thread";
}

TEST(Trainer, ThreadsZeroMeansEveryCore) {
  Record rec;
  const StageInfo threaded{"03_openmp", "data-parallel SGD", true};
  ASSERT_EQ(run_as_stage01(quick({"--threads", "0"}), fake_factory(&rec), threaded).code, 0);
  const unsigned cores = std::thread::hardware_concurrency();
  EXPECT_EQ(rec.config.threads, cores > 0 ? static_cast<int>(cores) : 1);
  ASSERT_EQ(run_as_stage01(quick({"--threads", "3"}), fake_factory(&rec), threaded).code, 0);
  EXPECT_EQ(rec.config.threads, 3);
}

TEST(Trainer, JsonHoldsEveryFigure) {
  const fs::path dir = trainer_run_dir();
  const fs::path json_path = dir / "run.json";
  Record rec;
  const RunResult r = run_as_stage01(quick({"--json", json_path.string(), "--profile"}), fake_factory(&rec));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const nlohmann::json j = read_json(json_path);
  EXPECT_FALSE(fs::exists(json_path.string() + ".tmp"));
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["stage"]["id"], "01_fc_softmax");
  EXPECT_EQ(j["device"], "fake device");
  EXPECT_EQ(j["options"]["epochs"], 2);
  EXPECT_EQ(j["options"]["limit"], 200);
  EXPECT_EQ(j["data"]["train_examples"], 200);
  EXPECT_EQ(j["data"]["test_examples"], 2000);
  EXPECT_EQ(j["arch"]["spec"], "fc256,relu,fc128,relu,fc10");
  ASSERT_EQ(j["epochs"].size(), 2u);
  for (const auto& e : j["epochs"])
    for (const char* key : {"epoch", "loss", "train_accuracy", "test_accuracy", "seconds", "images_per_second"})
      EXPECT_TRUE(e.contains(key)) << key;
  EXPECT_DOUBLE_EQ(j["epochs"][1]["loss"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["epochs"][1]["train_accuracy"].get<double>(), 0.8);
  EXPECT_DOUBLE_EQ(j["final"]["accuracy"].get<double>(), 1.0);
  EXPECT_EQ(j["final"]["per_class"].size(), 10u);
  EXPECT_EQ(j["profile"]["layers"].size(), 2u);
  EXPECT_TRUE(j.contains("total_seconds"));
  EXPECT_FALSE(j.contains("stage_results")) << "an engine with nothing to add adds nothing";
}

// An engine with facts of its own (stage 05's im2col workspace, stage 07's kernels) gets
// them into the JSON of a training run and of an evaluation, as it returns them after the run.
class EngineWithResults : public FakeEngine {
 public:
  using FakeEngine::FakeEngine;
  EpochStats train_epoch(const Dataset& train, int epoch, const BatchCallback& on_batch) override {
    ++epochs_seen_;
    return FakeEngine::train_epoch(train, epoch, on_batch);
  }
  nlohmann::json stage_results() const override { return {{"kernel", 7}, {"epochs_seen", epochs_seen_}}; }

 private:
  int epochs_seen_ = 0;
};

TEST(Trainer, JsonHoldsTheStagesOwnResults) {
  const fs::path dir = trainer_run_dir();
  Record rec;
  const EngineFactory factory = [&rec](const EngineConfig& config) -> std::unique_ptr<Engine> {
    return std::make_unique<EngineWithResults>(config, Mode::Normal, &rec);
  };
  const std::string trained = (dir / "train.json").string(), model = (dir / "m.model").string();
  ASSERT_EQ(run_as_stage01(quick({"--json", trained, "--save", model}), factory).code, 0);
  EXPECT_EQ(read_json(trained)["stage_results"], (nlohmann::json{{"kernel", 7}, {"epochs_seen", 2}}));
  const std::string evaluated = (dir / "eval.json").string();
  ASSERT_EQ(run_as_stage01(quick({"--load", model, "--evaluate", "--json", evaluated}), factory).code, 0);
  EXPECT_EQ(read_json(evaluated)["stage_results"]["epochs_seen"], 0);
}

// --val-fraction: the held-out set is evaluated every epoch with the engine's
// evaluate(), shown between train and test, and kept in the JSON.
TEST(Trainer, ValidationSetEveryEpoch) {
  const fs::path dir = trainer_run_dir();
  const fs::path json_path = dir / "run.json";
  Record rec;
  const RunResult r = run_as_stage01(quick({"--val-fraction", "0.1", "--json", json_path.string()}), fake_factory(&rec));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(rec.evaluations, 4) << "the validation and the test set, each epoch";
  EXPECT_CONTAINS(r.out, "20 of the 200 training examples held out for validation (--val-fraction 0.1, --seed 42)");
  EXPECT_CONTAINS(r.out, "synthetic 180 train, 20 val, 2000 test, 1x28x28");
  const std::regex line(R"(epoch 2/2  loss 0\.5000  train 80\.00%  val loss 0\.5000  val 100\.00%  test 100\.00%  [0-9.]+ s)");
  EXPECT_TRUE(std::regex_search(r.out, line)) << r.out;
  const nlohmann::json j = read_json(json_path);
  EXPECT_EQ(j["data"]["train_examples"], 180);
  EXPECT_EQ(j["data"]["val_examples"], 20);
  EXPECT_DOUBLE_EQ(j["options"]["val_fraction"].get<double>(), 0.1);
  for (const auto& e : j["epochs"]) {
    EXPECT_DOUBLE_EQ(e["val_accuracy"].get<double>(), 1.0);
    EXPECT_DOUBLE_EQ(e["val_loss"].get<double>(), 0.5);
    EXPECT_TRUE(e.contains("val_eval_seconds"));
  }

  const RunResult plain = run_as_stage01(quick(), fake_factory(&rec));
  EXPECT_EQ(plain.out.find("val"), std::string::npos) << "no validation set, no word of one";
  const RunResult verbose = run_as_stage01(quick({"--val-fraction", "0.5", "--verbose"}), fake_factory(&rec));
  EXPECT_CONTAINS(verbose.out, "data: val   100 examples held out of the training set");
  EXPECT_CONTAINS(verbose.out, ", val eval ");

  const RunResult none_left = run_as_stage01(quick({"--val-fraction", "0.999"}), fake_factory(&rec));
  EXPECT_EQ(none_left.code, 2) << "a usage error";
  EXPECT_CONTAINS(none_left.err, "--val-fraction 0.999 holds out 200 of the 200 training examples");
}

// --resize and --channels reach the engine as its input shape, and the data line says what was done.
TEST(Trainer, ResizeAndChannelsSetTheInputShape) {
  Record rec;
  const RunResult r = run_as_stage01(quick({"--resize", "14x20", "--channels", "3", "--model", "cnn"}), fake_factory(&rec));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(rec.config.input, (Shape3{3, 14, 20}));
  EXPECT_CONTAINS(r.out, "training on the first 200 examples (--limit); resized 28x28 -> 14x20 (bilinear), 1 -> 3 channels");
  EXPECT_CONTAINS(r.out, "2000 test, 3x14x20 |");
  const RunResult bad = run_as_stage01(quick({"--channels", "2", "--resize", "8"}), fake_factory(&rec));
  EXPECT_EQ(bad.code, 0) << "1 -> 2 repeats the plane: allowed";
  const fs::path dir = trainer_run_dir();
  for (const char* name : {"train.csv", "test.csv"}) std::ofstream(dir / name) << "1,2,0\n3,4,1\n";
  const RunResult csv = run_as_stage01({"--dataset", "csv", "--data-dir", dir.string(), "--resize", "8", "--no-progress"},
                            fake_factory(&rec));
  EXPECT_EQ(csv.code, 2) << csv.out << csv.err;
  EXPECT_CONTAINS(csv.err, "error: --resize: the csv data set's examples are feature vectors (2x1x1), not pictures");
}

// A named model defined on its own input (m0 .. m4) gets it: the examples are resized and
// converted as --resize and --channels would, and the data line says why. The command
// line's own --resize, --channels, --arch or --layers keep the data set's shape otherwise.
TEST(Trainer, NamedModelsGetTheirOwnInput) {
  Record rec;
  const RunResult m1 = run_as_stage01(quick({"--model", "m1"}), fake_factory(&rec));
  ASSERT_EQ(m1.code, 0) << m1.out << m1.err;
  EXPECT_EQ(rec.config.input, (Shape3{3, 40, 40}));
  EXPECT_CONTAINS(m1.out, "training on the first 200 examples (--limit); resized 28x28 -> 40x40 (bilinear), 1 -> 3 "
                          "channels for m1's input 3x40x40 (--resize and --channels choose another)");
  EXPECT_CONTAINS(m1.out, "2000 test, 3x40x40 |");
  const RunResult m0 = run_as_stage01(quick({"--model", "m0"}), fake_factory(&rec));
  ASSERT_EQ(m0.code, 0) << m0.out << m0.err;
  EXPECT_EQ(rec.config.input, (Shape3{3, 32, 32}));
  EXPECT_CONTAINS(m0.out, "for m0's input 3x32x32");

  // The command line's own shape wins, whole: --resize alone keeps the gray plane.
  const RunResult own = run_as_stage01(quick({"--model", "m1", "--resize", "20"}), fake_factory(&rec));
  ASSERT_EQ(own.code, 0) << own.out << own.err;
  EXPECT_EQ(rec.config.input, (Shape3{1, 20, 20}));
  EXPECT_EQ(own.out.find("m1's input"), std::string::npos) << own.out;
  const RunResult channels = run_as_stage01(quick({"--model", "m2", "--channels", "3"}), fake_factory(&rec));
  ASSERT_EQ(channels.code, 0) << channels.out << channels.err;
  EXPECT_EQ(rec.config.input, (Shape3{3, 28, 28}));
  // The course's own models take the data set's shape.
  const RunResult cnn = run_as_stage01(quick({"--model", "cnn"}), fake_factory(&rec));
  ASSERT_EQ(cnn.code, 0) << cnn.out << cnn.err;
  EXPECT_EQ(rec.config.input, (Shape3{1, 28, 28}));
  EXPECT_EQ(cnn.out.find("resized"), std::string::npos) << cnn.out;

  TrainerOptions o;
  o.model = "m3";
  EXPECT_EQ(implied_model_input(o), (Shape3{3, 40, 40}));
  o.dataset = "csv";
  EXPECT_FALSE(implied_model_input(o).has_value()) << "a csv set's examples are not pictures";
  o.dataset = "fashion-mnist";
  o.arch = "conv8k3p1,relu,pool2,flatten,fc10";
  EXPECT_FALSE(implied_model_input(o).has_value()) << "--arch overrides --model";
  o.arch.clear();
  o.layers = "784,10";
  EXPECT_FALSE(implied_model_input(o).has_value()) << "--layers overrides --model";
  o.layers.clear();
  o.model = "mlp";
  EXPECT_FALSE(implied_model_input(o).has_value());
}

TEST(Trainer, ProfilePrintsPerLayerTimesPerBatch) {
  Record rec;
  const RunResult r = run_as_stage01(quick({"--profile", "--batch", "50"}), fake_factory(&rec));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(rec.config.profile);
  // 200 examples in batches of 50: 4 batches; fc1 took 30 ms forward, 60 ms backward in all.
  EXPECT_CONTAINS(r.out, "profile: ms per batch of 50, last epoch (4 batches)");
  const std::regex fc1(R"(fc1 \(fc256\) +7\.500 +15\.000 +22\.500 +90\.0%)");
  EXPECT_TRUE(std::regex_search(r.out, fc1)) << r.out;
  const std::regex total(R"(total +10\.000 +15\.000 +25\.000 +100\.0%)");
  EXPECT_TRUE(std::regex_search(r.out, total)) << r.out;
}

TEST(Trainer, VerboseShowsEvaluationTimeAndDataSources) {
  Record rec;
  const RunResult r = run_as_stage01(quick({"--verbose"}), fake_factory(&rec));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "(test eval ");
  EXPECT_CONTAINS(r.out, "data: train 200 examples from ");
}

TEST(Trainer, SaveThenLoadAndEvaluate) {
  const fs::path dir = trainer_run_dir();
  const std::string model = (dir / "model.bin").string();
  ASSERT_NO_FATAL_FAILURE(save_trained_model(model));
  ASSERT_TRUE(fs::exists(model));
  EXPECT_FALSE(fs::exists(model + ".tmp"));

  Record loaded;
  const std::string json_path = (dir / "eval.json").string();
  const RunResult r = run_as_stage01(quick({"--load", model, "--evaluate", "--json", json_path}), fake_factory(&loaded));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(loaded.epochs.empty()) << "--evaluate trains nothing";
  EXPECT_EQ(loaded.evaluations, 1);
  // A fresh fake engine predicts class 0 everywhere; the loaded weights give 100%.
  EXPECT_CONTAINS(r.out, "final test accuracy 100.00%");
  EXPECT_EQ(r.out.find("epoch 1/2"), std::string::npos);
  const nlohmann::json j = read_json(json_path);
  EXPECT_EQ(j["status"], "evaluated");
  EXPECT_DOUBLE_EQ(j["final"]["accuracy"].get<double>(), 1.0);
  EXPECT_CONTAINS(r.out, "loaded " + model + " (saved by stage 01_fc_softmax)");
}

TEST(Trainer, LoadWithoutEvaluateGoesOnTraining) {
  const fs::path dir = trainer_run_dir();
  const std::string model = (dir / "model.bin").string();
  ASSERT_NO_FATAL_FAILURE(save_trained_model(model));
  Record second;
  // A later flag wins over an earlier one, so scripts can append overrides.
  const RunResult r = run_as_stage01(quick({"--load", model, "--epochs", "1"}), fake_factory(&second));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(second.epochs, (std::vector<int>{0}));
  EXPECT_CONTAINS(r.out, "epoch 1/1");
}

TEST(Trainer, LoadingAnotherArchitectureIsRefused) {
  const fs::path dir = trainer_run_dir();
  const std::string model = (dir / "model.bin").string();
  ASSERT_NO_FATAL_FAILURE(save_trained_model(model));
  Record rec;
  const RunResult r = run_as_stage01(quick({"--load", model, "--evaluate", "-m", "cnn"}), fake_factory(&rec));
  EXPECT_EQ(r.code, 1);
  EXPECT_CONTAINS(r.err, model + " holds architecture 'fc256,relu,fc128,relu,fc10' for input 1x28x28");
  EXPECT_CONTAINS(r.err, "this run builds 'conv16k3p1,relu,pool2,conv32k3p1,relu,pool2,flatten,fc100,relu,fc10'");
}

// A dense-only stage (stage 01) given a CNN's model file says that it cannot run that model, instead of
// advising the --model/--arch the file was trained with, which it would refuse next.
TEST(Trainer, DenseOnlyStageRefusesAConvModelFileAsSuch) {
  const fs::path dir = trainer_run_dir();
  const std::string model = (dir / "cnn.bin").string();
  Record trained;
  const StageInfo conv_stage{"02_conv_pool", "conv layers on the CPU", false};
  ASSERT_EQ(run_as_stage01(quick({"-m", "cnn", "--save", model}), fake_factory(&trained), conv_stage).code, 0);
  const StageInfo dense{"01_fc_softmax", "dense layers on the CPU", false, /*dense_only=*/true};
  for (const std::string flag : {"--evaluate", "--epochs"}) {
    Record rec;
    std::vector<std::string> args = {"--load", model};
    if (flag == "--evaluate") args.push_back(flag);
    const RunResult r = run_as_stage01(quick(args), fake_factory(&rec), dense);
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_CONTAINS(r.err, model + " holds architecture 'conv16k3p1,relu,pool2,conv32k3p1,relu,pool2,flatten,fc100,"
                                   "relu,fc10' (saved by stage 02_conv_pool), which stage 01_fc_softmax cannot run: "
                                   "it has conv, pool and flatten layers");
    EXPECT_EQ(r.err.find("pass the --model"), std::string::npos) << r.err;
  }
}

TEST(Trainer, LoadingAMissingFileIsADataError) {
  Record rec;
  const std::string missing = (trainer_run_dir() / "missing.bin").string();
  const RunResult r = run_as_stage01(quick({"--load", missing, "--evaluate"}), fake_factory(&rec));
  EXPECT_EQ(r.code, 1);
  EXPECT_CONTAINS(r.err, missing);
}

TEST(Trainer, NaNLossStopsWithExitCode4) {
  Record rec;
  const RunResult r = run_as_stage01(quick({"--lr", "0.5"}), fake_factory(&rec, Mode::NaNLoss));
  EXPECT_EQ(r.code, 4);
  // This fake engine does not report its loss per batch, so the trainer checks once per epoch.
  EXPECT_CONTAINS(r.err, "loss is NaN at epoch 1 (this stage reports its loss once per epoch");
  EXPECT_CONTAINS(r.err, "the run diverged; try a smaller --lr, e.g. 0.05 (now 0.5)");
  EXPECT_EQ(rec.epochs.size(), 1u) << "training stops at the first diverged epoch";
}

TEST(Trainer, InfiniteLossStopsWithExitCode4) {
  Record rec;
  const fs::path json_path = trainer_run_dir() / "run.json";
  const RunResult r = run_as_stage01(quick({"--json", json_path.string()}), fake_factory(&rec, Mode::InfLoss));
  EXPECT_EQ(r.code, 4);
  EXPECT_CONTAINS(r.err, "loss is Inf at epoch 1 (this stage reports its loss once per epoch");
  EXPECT_CONTAINS(r.err, "the run diverged; try a smaller --lr, e.g. 0.002 (now 0.02)");
  EXPECT_EQ(read_json(json_path)["status"], "diverged");
}

TEST(Trainer, NotImplementedStopsWithTheTask) {
  Record rec;
  const RunResult r = run_as_stage01(quick(), fake_factory(&rec, Mode::NotImplementedInTraining));
  EXPECT_EQ(r.code, 3);
  const NotImplemented expected("Task 1.3", "solutions/01_fc_softmax/dense.cpp", "docs/01_fc_softmax.md");
  EXPECT_EQ(r.err, std::string(expected.what()) + "\n") << "only the task's message, nothing else";
  EXPECT_CONTAINS(r.err, "Task 1.3");
}

TEST(Trainer, NotImplementedInTheFactory) {
  const RunResult r = run_as_stage01(quick(), [](const EngineConfig&) -> std::unique_ptr<Engine> {
    throw NotImplemented("Task 1.1", "solutions/01_fc_softmax/init.cpp", "docs/01_fc_softmax.md");
  });
  EXPECT_EQ(r.code, 3);
  EXPECT_CONTAINS(r.err, "Task 1.1 is not implemented yet");
}

TEST(Trainer, ModelTheStageCannotRunIsAUsageError) {
  const RunResult r = run_as_stage01(quick({"-m", "cnn"}), [](const EngineConfig&) -> std::unique_ptr<Engine> {
    throw std::invalid_argument("stage 01 has no conv layers");
  });
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "stage 01_fc_softmax cannot run");
  EXPECT_CONTAINS(r.err, "stage 01 has no conv layers");
}

TEST(Trainer, ArchitectureThatDoesNotFitTheDataIsAUsageError) {
  Record rec;
  RunResult r = run_as_stage01(quick({"--arch", "fc32,relu,fc5"}), fake_factory(&rec));
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "must end with fc10");
  r = run_as_stage01(quick({"--arch", "conv4k40,fc10"}), fake_factory(&rec));
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "larger than the padded input");
  r = run_as_stage01(quick({"--layers", "100,10"}), fake_factory(&rec));
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "784");
  r = run_as_stage01(quick({"--arch", "fc10,bogus"}), fake_factory(&rec));
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "bogus");
  EXPECT_EQ(rec.engines_built, 0);
}

TEST(Trainer, AnyOtherExceptionIsCaught) {
  Record rec;
  const RunResult r = run_as_stage01(quick(), fake_factory(&rec, Mode::RuntimeError));
  EXPECT_EQ(r.code, 1);
  EXPECT_CONTAINS(r.err, "error: the fake device caught fire");
}

TEST(TrainerArch, NamedLayersAndCustom) {
  TrainerOptions o;
  const Shape3 mnist{1, 28, 28};
  EXPECT_EQ(resolve_arch_spec(o, mnist, 10), "fc256,relu,fc128,relu,fc10");
  o.activation = "tanh";
  EXPECT_EQ(resolve_arch_spec(o, mnist, 10), "fc256,tanh,fc128,tanh,fc10");
  EXPECT_EQ(resolve_arch_spec(o, Shape3{4, 1, 1}, 3), "fc256,tanh,fc128,tanh,fc3");
  o.layers = "784,64,10";
  EXPECT_EQ(resolve_arch_spec(o, mnist, 10), "fc64,tanh,fc10");
  o.arch = "CONV8k3p1, relu, pool2, fc10";
  EXPECT_EQ(resolve_arch_spec(o, mnist, 10), "conv8k3p1,relu,pool2,fc10");
}

TEST(TrainerArch, CountsParameters) {
  const Shape3 mnist{1, 28, 28};
  EXPECT_EQ(count_parameters(parse_arch(named_model_spec("mlp")), mnist, 10), 784 * 256 + 256 + 256 * 128 + 128 +
                                                                                  128 * 10 + 10);
  // conv 16: 16*1*9+16; conv 32: 32*16*9+32; fc100 on 32x7x7; fc10.
  EXPECT_EQ(count_parameters(parse_arch(named_model_spec("cnn")), mnist, 10),
            160 + 4640 + (32 * 7 * 7 * 100 + 100) + 1010);
}

TEST(ProgressBar, RendersPercentCountRateAndEta) {
  const std::string line = ProgressBar::render("epoch 1/2", 50, 100, 1.0, "loss 0.5000", 100);
  EXPECT_CONTAINS(line, "epoch 1/2 [");
  EXPECT_CONTAINS(line, " 50%");
  EXPECT_CONTAINS(line, "50/100");
  EXPECT_CONTAINS(line, "50/s");
  EXPECT_CONTAINS(line, "ETA 0:01");
  EXPECT_CONTAINS(line, "loss 0.5000");
  EXPECT_LE(ProgressBar::render("epoch 1/2", 50, 100, 1.0, "loss 0.5000", 40).size(), 39u);
  EXPECT_CONTAINS(ProgressBar::render("e", 100, 100, 2.0, "", 80), "100%");
}

TEST(ProgressBar, SilentWhenDisabled) {
  testing::internal::CaptureStderr();
  {
    ProgressBar bar("epoch 1/1", 10, false);
    EXPECT_FALSE(bar.active());
    bar.update(5, "x");
    bar.finish();
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

// --lr-scaling linear and --warmup-steps: the rate of every step, set between the steps.
TEST(Trainer, LinearScalingAndAWarmUpGiveEveryStepItsRate) {
  Record rec;
  const fs::path json = trainer_run_dir() / "rule.json";
  // 200 examples in batches of 50: 4 steps an epoch, 8 in the run; the rate 0.01 x 50/25 = 0.02.
  const RunResult r = run_as_stage01(quick({"--batch", "50", "--lr", "0.01", "--lr-schedule", "constant", "--lr-scaling", "linear",
                                 "--lr-reference-batch", "25", "--warmup-steps", "5", "--json", json.string()}),
                          fake_factory(&rec));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "lr 0.02 (0.01 x 50/25, linear scaling) warm-up 5 steps constant");
  const nlohmann::json settings = read_json(json)["options"];
  EXPECT_EQ(settings["lr_scaling"], "linear");
  EXPECT_EQ(settings["lr_reference_batch"], 25);
  EXPECT_EQ(settings["warmup_steps"], 5);
  ASSERT_EQ(rec.step_rates.size(), 8u);
  for (std::size_t s = 0; s < 8; ++s)
    EXPECT_DOUBLE_EQ(rec.step_rates[s], s < 5 ? 0.02 * static_cast<double>(s + 1) / 5 : 0.02) << "step " << s;

  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  Record long_warmup;
  const RunResult longer = run_as_stage01(quick({"--batch", "50", "--warmup-steps", "9"}), fake_factory(&long_warmup));
  EXPECT_CONTAINS(longer.err, "warning: --warmup-steps 9 is longer than the run (8 steps of 50)");

  // Under the cosine schedule the warm-up scales each epoch's rate; without --lr-scaling the rate is --lr.
  Record cosine;
  ASSERT_EQ(run_as_stage01(quick({"--batch", "50", "--lr", "0.01", "--warmup-steps", "2"}), fake_factory(&cosine)).code, 0);
  ASSERT_EQ(cosine.step_rates.size(), 8u);
  const std::vector<double> want = {0.005, 0.01, 0.01, 0.01, 0.005, 0.005, 0.005, 0.005};  // (1 + cos(pi/2)) / 2
  for (std::size_t s = 0; s < 8; ++s) EXPECT_NEAR(cosine.step_rates[s], want[s], 1e-15) << "step " << s;
}

TEST(LearningRateRule, LinearScalingAndWarmUp) {
  TrainerOptions o;
  o.lr = 0.02;
  o.batch = 1024;
  o.lr_schedule = "constant";
  EXPECT_DOUBLE_EQ(scaled_learning_rate(o), 0.02) << "--lr-scaling none: the rate as given";
  o.lr_scaling = "linear";
  EXPECT_DOUBLE_EQ(scaled_learning_rate(o), 0.32) << "1024 / 64 = 16 times the rate";
  o.warmup_steps = 100;
  EXPECT_DOUBLE_EQ(step_learning_rate(o, 0, 0), 0.0032);
  EXPECT_DOUBLE_EQ(step_learning_rate(o, 0, 49), 0.16);
  EXPECT_DOUBLE_EQ(step_learning_rate(o, 1, 99), 0.32);
  EXPECT_DOUBLE_EQ(step_learning_rate(o, 3, 100000), 0.32);
  o.lr_scaling = "square-root";
  EXPECT_THROW(scaled_learning_rate(o), std::invalid_argument);
}

}  // namespace
}  // namespace course
