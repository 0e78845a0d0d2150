// The stage 06 trainer end to end, and model files across stages: a model
// saved by stage 06 loads in stage 02 (CPU) and stage 05 (im2col on the GPU)
// and gives the same test accuracy there.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cnn_loaders.hpp"
#include "common/train/trainer.hpp"
#include "cudnn_step_engine.hpp"
#include "model_across_stages.hpp"
#include "s06_support.hpp"

using namespace course;
using trainer_run::run_with_json;

namespace {

const StageInfo kStage06{"06_cudnn", "Stage 06 (test)"};

std::unique_ptr<Engine> make_stage06(const EngineConfig& cfg) { return std::make_unique<CudnnStepEngine>(cfg, true); }

}  // namespace

TEST(Stage06_Trainer, CnnLearnsAndItsModelLoadsInStages02And05) {
  S06_SKIP_WITHOUT_GPU();
  trainer_run::expect_cnn_learns_and_loads_in(kStage06, make_stage06, {},
                                              {trainer_run::stage02_loader(), trainer_run::stage05_loader()});
}

// A model file of another architecture is refused, with the message naming both.
TEST(Stage06_Trainer, RefusesAModelOfAnotherArchitecture) {
  S06_SKIP_WITHOUT_GPU();
  const std::string model = ::testing::TempDir() + "s06_mlp_model.bin";
  std::remove(model.c_str());
  const auto saved = run_with_json(
      kStage06, make_stage06,
      {"--model", "mlp", "--dataset", "synthetic", "--limit", "256", "--epochs", "1", "--save", model}, "s06_mlp.json");
  ASSERT_EQ(saved.code, 0) << saved.out << saved.err;
  const auto refused = trainer_run::run_in_process(
      kStage06, make_stage06,
      {"trainer", "--model", "cnn", "--dataset", "synthetic", "--load", model, "--evaluate", "--no-progress"});
  EXPECT_EQ(refused.code, kExitError);
  EXPECT_NE(refused.err.find("architecture"), std::string::npos) << refused.err;
}
