// The stage 03 trainer end to end on the built-in synthetic data, with both
// strategies: --threads and --parallel reach the engine, the device line says
// so, the JSON has the seconds and images/s the thread sweep reads, and the
// CNN learns.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "02_conv_pool/cnn.hpp"
#include "03_openmp/omp_engine.hpp"
#include "03_openmp/trainer_options.hpp"
#include "common/train/trainer.hpp"
#include "trainer_run.hpp"

using namespace course;

namespace {
// Runs the trainer as `s03_train_solution <args> --json <file>` would, with stage 03's --parallel
// flag; returns the JSON it wrote (none after a usage error) and its output in *output.
nlohmann::json run_stage03_trainer(std::vector<std::string> args, int* exit_code, std::string* output) {
  const StageInfo stage{"03_openmp", "Stage 03 (test)", /*has_threads=*/true};
  std::string parallel = "data";
  const EngineFactory omp_engine = [&parallel](const EngineConfig& cfg) {
    return make_omp_engine(cfg, parse_parallelism(parallel), make_cnn_layer<float>);
  };
  return trainer_run::run_for_json(stage, omp_engine, "s03_train_solution", std::move(args), exit_code, output,
                                   [&parallel](CLI::App& app) { add_parallel_option(app, parallel); });
}

void expect_cnn_learns(const std::string& parallel, int threads) {
  SCOPED_TRACE("--parallel " + parallel + " --threads " + std::to_string(threads));
  int code = -1;
  std::string out;
  const auto j = run_stage03_trainer({"--model", "cnn", "--dataset", "synthetic", "--limit", "640", "--epochs", "3",
                                      "--lr", "0.02", "--threads", std::to_string(threads), "--parallel", parallel},
                                     &code, &out);
  ASSERT_EQ(code, 0) << out;
  EXPECT_EQ(j.at("device"), cpu_threads_label(threads, parse_parallelism(parallel)));
  EXPECT_EQ(j.at("threads"), threads);
  const auto& epochs = j.at("epochs");
  ASSERT_EQ(epochs.size(), 3u);
  for (const auto& e : epochs) {
    EXPECT_GT(e.at("seconds").get<double>(), 0.0);
    EXPECT_GT(e.at("images_per_second").get<double>(), 0.0);
  }
  EXPECT_LT(epochs[2].at("loss").get<double>(), 0.7 * epochs[0].at("loss").get<double>()) << "the loss did not fall";
  EXPECT_GT(epochs[2].at("test_accuracy").get<double>(), 0.6) << "the test accuracy stayed near chance";
}
}  // namespace

TEST(Stage03_Trainer, DataParallelCnnLearns) { expect_cnn_learns("data", 2); }

TEST(Stage03_Trainer, LoopLevelCnnLearns) { expect_cnn_learns("loops", 3); }

TEST(Stage03_Trainer, UnknownStrategyIsAUsageError) {
  int code = -1;
  std::string out;
  run_stage03_trainer({"--dataset", "synthetic", "--parallel", "both"}, &code, &out);
  EXPECT_EQ(code, kExitUsage);
  EXPECT_NE(out.find("--parallel"), std::string::npos) << out;
}
