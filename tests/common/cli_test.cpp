// Tests of common/train/cli: the shared command line, its defaults, its checks and
// its exit codes (0 after --help, 2 for every usage error).
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/train/cli.hpp"
#include "common/train/trainer.hpp"
#include "expect_contains.hpp"

namespace course {
namespace {

const StageInfo kCpuStage{"01_fc_softmax", "dense layers on the CPU", false};
const StageInfo kThreadedStage{"03_openmp", "data-parallel SGD", true};

struct Parsed {
  std::optional<int> code;
  TrainerOptions options;
  std::string out, err;
};

Parsed parse(const std::vector<std::string>& args, const StageInfo& stage = kCpuStage,
             const std::function<void(CLI::App&)>& extra = {}) {
  std::vector<const char*> argv = {"s01_train"};
  for (const auto& a : args) argv.push_back(a.c_str());
  Parsed p;
  std::ostringstream out, err;
  p.code = parse_trainer_options(static_cast<int>(argv.size()), argv.data(), stage, p.options, extra, out, err);
  p.out = out.str();
  p.err = err.str();
  return p;
}

// A usage error: exit code 2, CLI11's message naming the flag, and the hint.
void expect_usage_error(const std::vector<std::string>& args, const std::string& flag,
                        const StageInfo& stage = kCpuStage) {
  const Parsed p = parse(args, stage);
  std::string joined;
  for (const auto& a : args) joined += a + " ";
  ASSERT_TRUE(p.code.has_value()) << "accepted: " << joined;
  EXPECT_EQ(*p.code, 2) << joined;
  EXPECT_CONTAINS(p.err, flag);
  EXPECT_CONTAINS(p.err, "Run with --help for the options.");
  EXPECT_EQ(p.out, "") << joined;
}

TEST(Cli, DefaultsAreTheCourseDefaults) {
  const Parsed p = parse({});
  ASSERT_FALSE(p.code.has_value()) << p.err;
  const TrainerOptions& o = p.options;
  EXPECT_EQ(o.model, "mlp");
  EXPECT_EQ(o.arch, "");
  EXPECT_EQ(o.layers, "");
  EXPECT_EQ(o.activation, "relu");
  EXPECT_EQ(o.loss, "cross-entropy");
  EXPECT_EQ(o.dataset, "fashion-mnist");
  EXPECT_EQ(o.epochs, 10);
  EXPECT_EQ(o.batch, 64);
  EXPECT_DOUBLE_EQ(o.lr, 0.02);
  EXPECT_EQ(o.lr_schedule, "cosine");
  EXPECT_DOUBLE_EQ(o.momentum, 0.9);
  EXPECT_EQ(o.seed, 42u);
  EXPECT_EQ(o.threads, 0);
  EXPECT_EQ(o.limit, 0);
  EXPECT_FALSE(o.evaluate);
  EXPECT_FALSE(o.profile);
  EXPECT_FALSE(o.verbose);
  EXPECT_TRUE(o.progress);
}

TEST(Cli, ReadsEveryFlag) {
  const Parsed p = parse({"-m", "cnn", "--activation", "tanh", "--loss", "mse", "--dataset", "synthetic",
                          "--data-dir", "/tmp/d", "--epochs", "3", "--batch", "32", "--lr", "0.05", "--momentum",
                          "0", "--seed", "7", "--save", "a.bin", "--load", "b.bin", "--evaluate", "--limit", "500",
                          "--profile", "--json", "r.json", "--verbose", "--no-progress"});
  ASSERT_FALSE(p.code.has_value()) << p.err;
  const TrainerOptions& o = p.options;
  EXPECT_EQ(o.model, "cnn");
  EXPECT_EQ(o.activation, "tanh");
  EXPECT_EQ(o.loss, "mse");
  EXPECT_EQ(o.dataset, "synthetic");
  EXPECT_EQ(o.data_dir, "/tmp/d");
  EXPECT_EQ(o.epochs, 3);
  EXPECT_EQ(o.batch, 32);
  EXPECT_DOUBLE_EQ(o.lr, 0.05);
  EXPECT_DOUBLE_EQ(o.momentum, 0.0);
  EXPECT_EQ(o.seed, 7u);
  EXPECT_EQ(o.save, "a.bin");
  EXPECT_EQ(o.load, "b.bin");
  EXPECT_TRUE(o.evaluate);
  EXPECT_EQ(o.limit, 500);
  EXPECT_TRUE(o.profile);
  EXPECT_EQ(o.json, "r.json");
  EXPECT_TRUE(o.verbose);
  EXPECT_FALSE(o.progress);
}

TEST(Cli, ArchAndLayers) {
  Parsed p = parse({"--arch", "conv8k3p1,relu,pool2,fc10"});
  ASSERT_FALSE(p.code.has_value()) << p.err;
  EXPECT_EQ(p.options.arch, "conv8k3p1,relu,pool2,fc10");
  p = parse({"--layers=784,256,10", "--epochs=2"});
  ASSERT_FALSE(p.code.has_value()) << p.err;
  EXPECT_EQ(p.options.layers, "784,256,10");
  EXPECT_EQ(p.options.epochs, 2);
  expect_usage_error({"--arch", "fc10", "--layers", "784,10"}, "--arch");
}

TEST(Cli, HelpExitsZeroAndListsTheFlags) {
  const Parsed p = parse({"--help"});
  ASSERT_TRUE(p.code.has_value());
  EXPECT_EQ(*p.code, 0);
  EXPECT_EQ(p.err, "");
  for (const char* flag : {"--model", "--arch", "--layers", "--activation", "--loss", "--dataset", "--data-dir",
                           "--epochs", "--batch", "--lr", "--momentum", "--seed", "--save", "--load", "--evaluate",
                           "--limit", "--profile", "--json", "--verbose", "--no-progress", "--resize", "--channels",
                           "--val-fraction"})
    EXPECT_CONTAINS(p.out, flag);
  EXPECT_CONTAINS(p.out, "align_corners=False");
  EXPECT_CONTAINS(p.out, "after --limit");
  EXPECT_CONTAINS(p.out, "01_fc_softmax");
  EXPECT_CONTAINS(p.out, "Examples:");
  EXPECT_CONTAINS(p.out, "s01_train -m cnn");
  EXPECT_CONTAINS(p.out, "{mlp,cnn,cnn-deep,m0,m1,m2,m3,m4}");
  EXPECT_EQ(p.out.find("--threads"), std::string::npos) << "a one-thread stage has no --threads";
}

// A stage of dense layers only (stage 01) offers no model, spec or example it would refuse: no CNN in the
// model list, no conv layer in the --arch example, no `-m cnn` among the examples.
TEST(Cli, DenseOnlyStageOffersNoConvLayers) {
  const StageInfo dense{"01_fc_softmax", "dense layers on the CPU", false, /*dense_only=*/true};
  const Parsed p = parse({"--help"}, dense);
  ASSERT_TRUE(p.code.has_value());
  EXPECT_EQ(*p.code, 0);
  EXPECT_CONTAINS(p.out, "-m,--model NAME:{mlp}=mlp");
  EXPECT_CONTAINS(p.out, "Examples:");
  for (const char* refused : {"cnn", "conv", "pool", "m0", "m4"})
    EXPECT_EQ(p.out.find(refused), std::string::npos) << "--help offers '" << refused << "':\n" << p.out;
  EXPECT_CONTAINS(p.out, "--arch fc128,tanh,fc64,relu,fc10");
  EXPECT_CONTAINS(p.out, "--load mlp.bin --evaluate");
  // A wrong word is told to choose from what the stage runs; `-m cnn` still parses, for the engine to
  // refuse with its reason.
  const Parsed typo = parse({"-m", "cnnn"}, dense);
  ASSERT_TRUE(typo.code.has_value());
  EXPECT_CONTAINS(typo.err, "'cnnn' is not a known model (choose from mlp)");
  EXPECT_FALSE(parse({"-m", "cnn"}, dense).code.has_value());
  EXPECT_EQ(stage_models(dense), (std::vector<std::string>{"mlp"}));
  EXPECT_EQ(stage_models(kCpuStage), named_models()) << "a stage with conv layers offers every model";
}

TEST(Cli, WhatADenseOnlyStageCannotRun) {
  const StageInfo dense{"01_fc_softmax", "dense layers on the CPU", false, /*dense_only=*/true};
  EXPECT_EQ(stage_cannot_run(dense, "fc256,relu,fc10"), "");
  EXPECT_EQ(stage_cannot_run(dense, "conv8k5,relu,pool2,flatten,fc10"),
            "it has conv, pool and flatten layers, and stage 01_fc_softmax has dense layers and activations only");
  EXPECT_EQ(stage_cannot_run(dense, "avgpool2,fc10"),
            "it has pool layers, and stage 01_fc_softmax has dense layers and activations only");
  EXPECT_EQ(stage_cannot_run(kCpuStage, "conv8k5,relu,pool2,fc10"), "") << "not a dense-only stage";
  EXPECT_EQ(stage_cannot_run(dense, "not a spec"), "") << "a bad spec is for the parser to reject";
  EXPECT_EQ(model_file_refusal(dense, "m.bin", "fc10", "01_fc_softmax"), "");
  const std::string refusal = model_file_refusal(dense, "cnn.bin", "conv8k5,relu,pool2,fc10", "02_conv_pool");
  EXPECT_CONTAINS(refusal, "cnn.bin holds architecture 'conv8k5,relu,pool2,fc10' (saved by stage 02_conv_pool), "
                           "which stage 01_fc_softmax cannot run: it has conv and pool layers");
  EXPECT_EQ(refusal.find("--model"), std::string::npos) << refusal;
}

TEST(Cli, ThreadsOnlyWhereTheStageHasThem) {
  expect_usage_error({"--threads", "4"}, "--threads");
  Parsed p = parse({"--threads", "4"}, kThreadedStage);
  ASSERT_FALSE(p.code.has_value()) << p.err;
  EXPECT_EQ(p.options.threads, 4);
  p = parse({"--help"}, kThreadedStage);
  EXPECT_CONTAINS(p.out, "--threads");
  expect_usage_error({"--threads", "-1"}, "--threads", kThreadedStage);
}

TEST(Cli, UnknownFlag) {
  expect_usage_error({"--epoch", "3"}, "--epoch");
  expect_usage_error({"stray"}, "stray");
}

TEST(Cli, MissingValue) {
  expect_usage_error({"--epochs"}, "--epochs");
  expect_usage_error({"--lr"}, "--lr");
  expect_usage_error({"--model"}, "--model");
}

TEST(Cli, BadNumbers) {
  expect_usage_error({"--epochs", "0"}, "--epochs");
  expect_usage_error({"--epochs", "-2"}, "--epochs");
  expect_usage_error({"--epochs", "ten"}, "--epochs");
  expect_usage_error({"--batch", "0"}, "--batch");
  expect_usage_error({"--batch", "-64"}, "--batch");
  expect_usage_error({"--lr", "0"}, "--lr");
  expect_usage_error({"--lr", "-0.1"}, "--lr");
  expect_usage_error({"--momentum", "1"}, "--momentum");
  expect_usage_error({"--momentum", "-0.5"}, "--momentum");
  expect_usage_error({"--limit", "-1"}, "--limit");
  const Parsed p = parse({"--epochs", "0"});
  EXPECT_CONTAINS(p.err, "--epochs: must be at least 1, not 0");
}

// --resize, --channels and --val-fraction: what they read, and every bad value
// a usage error that names the flag.
TEST(Cli, ResizeChannelsAndValidation) {
  Parsed p = parse({"--resize", "40", "--channels", "3", "--val-fraction", "0.1"});
  ASSERT_FALSE(p.code.has_value()) << p.err;
  EXPECT_EQ(p.options.resize, "40");
  EXPECT_EQ(p.options.channels, 3);
  EXPECT_DOUBLE_EQ(p.options.val_fraction, 0.1);
  p = parse({"--resize", "32x48", "--channels", "1", "--val-fraction", "0"});
  ASSERT_FALSE(p.code.has_value()) << p.err;
  EXPECT_EQ(p.options.resize, "32x48");
  const Parsed defaults = parse({});
  EXPECT_EQ(defaults.options.resize, "");
  EXPECT_EQ(defaults.options.channels, 0) << "0: as the data set";
  EXPECT_DOUBLE_EQ(defaults.options.val_fraction, 0.0);

  for (const char* bad : {"0", "-3", "4097", "abc", "3x", "0x5", "2x-2", "1.5", "99999999999"})
    expect_usage_error({"--resize", bad}, "--resize");
  EXPECT_CONTAINS(parse({"--resize", "0"}).err, "--resize: expected N or HxW (height x width), each from 1 to 4096, not '0'");
  for (const char* bad : {"0", "-1", "65", "1.5", "three", "100000000000"}) expect_usage_error({"--channels", bad}, "--channels");
  EXPECT_CONTAINS(parse({"--channels", "0"}).err, "--channels: must be from 1 to 64, not 0");
  for (const char* bad : {"1", "-0.1", "1.5", "half", "nan"}) expect_usage_error({"--val-fraction", bad}, "--val-fraction");
  EXPECT_CONTAINS(parse({"--val-fraction", "1"}).err, "--val-fraction: must be in [0, 1), not 1");
}

// --epochs 0 saves the initial weights: it needs --save, and without it is the
// usage error a slip of the finger deserves.
TEST(Cli, ZeroEpochsOnlyWithSave) {
  const Parsed p = parse({"--epochs", "0", "--save", "init.bin"});
  ASSERT_FALSE(p.code.has_value()) << p.err;
  EXPECT_EQ(p.options.epochs, 0);
  EXPECT_EQ(p.options.save, "init.bin");
  expect_usage_error({"--epochs", "0", "--json", "x.json"}, "--epochs");
  EXPECT_CONTAINS(parse({"--epochs", "0"}).err, "0 is allowed only with --save FILE");
}

TEST(Cli, UnknownNames) {
  expect_usage_error({"--model", "resnet50"}, "--model");
  expect_usage_error({"--dataset", "imagenet"}, "--dataset");
  expect_usage_error({"--loss", "hinge"}, "--loss");
  expect_usage_error({"--activation", "gelu"}, "--activation");
  const Parsed p = parse({"--model", "resnet50"});
  EXPECT_CONTAINS(p.err, "'resnet50' is not a known model (choose from mlp, cnn, cnn-deep, m0, m1, m2, m3, m4)");
}

TEST(Cli, EvaluateNeedsLoad) {
  expect_usage_error({"--evaluate"}, "--evaluate");
  const Parsed p = parse({"--evaluate"});
  EXPECT_CONTAINS(p.err, "--load");
}

TEST(Cli, AReferenceBatchNeedsTheLinearRule) {
  expect_usage_error({"--lr-reference-batch", "128"}, "--lr-scaling");
  EXPECT_FALSE(parse({"--lr-scaling", "linear", "--lr-reference-batch", "128"}).code.has_value());
  expect_usage_error({"--lr-scaling", "square-root"}, "--lr-scaling");
  expect_usage_error({"--warmup-steps", "-1"}, "--warmup-steps");
}

TEST(Cli, StageAddsItsOwnFlags) {
  std::string parallel = "data";
  int kernel = 1;
  auto extra = [&](CLI::App& app) {
    app.add_option("--parallel", parallel, "How to parallelise")->check(CLI::IsMember({"data", "loops"}));
    app.add_option("--kernel", kernel, "Matmul kernel version");
  };
  Parsed p = parse({"--parallel", "loops", "--kernel", "3", "--epochs", "2"}, kThreadedStage, extra);
  ASSERT_FALSE(p.code.has_value()) << p.err;
  EXPECT_EQ(parallel, "loops");
  EXPECT_EQ(kernel, 3);
  EXPECT_EQ(p.options.epochs, 2);
  p = parse({"--help"}, kThreadedStage, extra);
  EXPECT_CONTAINS(p.out, "--parallel");
  p = parse({"--parallel", "threads"}, kThreadedStage, extra);
  ASSERT_TRUE(p.code.has_value());
  EXPECT_EQ(*p.code, 2);
  EXPECT_CONTAINS(p.err, "--parallel");
}

TEST(Cli, OptionsAsJson) {
  const Parsed p = parse({"--epochs", "4"});
  const nlohmann::json j = to_json(p.options);
  EXPECT_EQ(j["epochs"], 4);
  for (const char* key : {"model", "arch", "layers", "activation", "loss", "dataset", "data_dir", "epochs", "batch",
                          "lr", "momentum", "seed", "threads", "save", "load", "evaluate", "limit", "profile",
                          "json", "verbose", "progress", "resize", "channels", "val_fraction", "output",
                          "leaky_slope"})
    EXPECT_TRUE(j.contains(key)) << key;
}

// The same through run_trainer(): the exit codes a shell sees.
int run_captured(const std::vector<std::string>& args, std::string* out, std::string* err, bool* factory_called) {
  std::vector<std::string> all = {"s01_train"};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  *factory_called = false;
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  const int code = run_trainer(static_cast<int>(argv.size()), argv.data(), kCpuStage,
                               [factory_called](const EngineConfig&) -> std::unique_ptr<Engine> {
                                 *factory_called = true;
                                 return nullptr;
                               });
  *out = testing::internal::GetCapturedStdout();
  *err = testing::internal::GetCapturedStderr();
  return code;
}

TEST(CliExitCodes, UsageErrorsExitWithTwo) {
  std::string out, err;
  bool called = false;
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--bogus"},
                                             {"--epochs"},
                                             {"--epochs", "0"},
                                             {"--batch", "-1"},
                                             {"--lr", "0"},
                                             {"--model", "vgg"},
                                             {"--dataset", "imagenet"},
                                             {"--evaluate"}}) {
    EXPECT_EQ(run_captured(args, &out, &err, &called), 2) << args[0];
    EXPECT_CONTAINS(err, args[0]);
    EXPECT_CONTAINS(err, "Run with --help for the options.");
    EXPECT_FALSE(called) << "no engine is built after a usage error";
  }
}

TEST(CliExitCodes, HelpExitsWithZero) {
  std::string out, err;
  bool called = false;
  EXPECT_EQ(run_captured({"--help"}, &out, &err, &called), 0);
  EXPECT_CONTAINS(out, "--epochs");
  EXPECT_EQ(err, "");
  EXPECT_FALSE(called);
}

}  // namespace
}  // namespace course
