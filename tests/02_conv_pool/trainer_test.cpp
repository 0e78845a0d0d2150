// The stage 02 trainer's engine through the shared trainer, end to end on the
// built-in synthetic data: the CNN's loss falls and its accuracy rises, on
// 1x28x28 input and on CIFAR-shaped 3x32x32 input (--dataset cifar10 falls
// back to the synthetic set of that shape when no CIFAR-10 files are found).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "01_fc_softmax/cpu_engine.hpp"
#include "02_conv_pool/cnn.hpp"
#include "common/train/trainer.hpp"
#include "trainer_run.hpp"

using namespace course;

namespace {
// Runs the trainer as `s02_train_solution --model cnn --dataset <dataset> ... --json <file>` would:
// the course's `cnn`, 3 epochs of 640 examples at --lr 0.02. Returns the JSON it wrote.
nlohmann::json train_cnn_on(const std::string& dataset, int* exit_code) {
  const StageInfo stage{"02_conv_pool", "Stage 02 (test)"};
  const EngineFactory cnn_engine = [](const EngineConfig& cfg) {
    return std::make_unique<CpuEngine>(cfg, make_cnn_layer<float>);
  };
  std::vector<std::string> args = {"--model", "cnn", "--dataset", dataset, "--limit", "640", "--epochs", "3",
                                   "--lr", "0.02"};
  return trainer_run::run_for_json(stage, cnn_engine, "s02_train_solution", std::move(args), exit_code);
}

void expect_learns(const nlohmann::json& j) {
  ASSERT_EQ(j.at("status"), "ok");
  const auto& epochs = j.at("epochs");
  ASSERT_EQ(epochs.size(), 3u);
  const double first_loss = epochs[0].at("loss"), last_loss = epochs[2].at("loss");
  EXPECT_LT(last_loss, 0.7 * first_loss) << "the CNN's training loss did not fall";
  EXPECT_GT(epochs[2].at("train_accuracy").get<double>(), epochs[0].at("train_accuracy").get<double>() + 0.2)
      << "the CNN's training accuracy did not rise";
  EXPECT_GT(epochs[2].at("test_accuracy").get<double>(), 0.6) << "the CNN's test accuracy stayed near chance";
}
}  // namespace

TEST(Stage02_Trainer, CnnLearnsTheSyntheticSet) {
  int code = -1;
  const auto j = train_cnn_on("synthetic", &code);
  ASSERT_EQ(code, 0);
  EXPECT_EQ(j.at("arch").at("spec"), named_model_spec("cnn"));
  EXPECT_EQ(j.at("data").at("shape"), "1x28x28");
  expect_learns(j);
}

TEST(Stage02_Trainer, CnnRunsOnCifarShapedInput) {
  int code = -1;
  const auto j = train_cnn_on("cifar10", &code);
  ASSERT_EQ(code, 0);
  EXPECT_EQ(j.at("data").at("shape"), "3x32x32");
  // Real CIFAR-10 files in ./data would be loaded instead: 640 images then say nothing about learning.
  if (j.at("data").at("synthetic_fallback").get<bool>()) expect_learns(j);
}
