// The stage 08 trainer end to end, and model files across stages: a model saved by
// stage 08 loads in stage 02 (CPU), stage 05 (im2col on the GPU) and stage 06 (cuDNN)
// and gives the same test accuracy there.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "06_cudnn/cudnn_step.hpp"
#include "cnn_loaders.hpp"
#include "common/gpu/gpu_engine.hpp"
#include "08_fused/fused_step.hpp"
#include "common/train/trainer.hpp"
#include "model_across_stages.hpp"
#include "s08_support.hpp"

using namespace course;
using trainer_run::run_with_json;

namespace {

const StageInfo kStage08{"08_fused", "Stage 08 (test)"};

std::unique_ptr<Engine> make_stage08(const EngineConfig& cfg) { return make_fused_engine(cfg); }

}  // namespace

TEST(Stage08_Trainer, CnnLearnsAndItsModelLoadsInStages02_05And06) {
  SKIP_WITHOUT_GPU();
  const auto make_stage06 = [](const EngineConfig& cfg) -> std::unique_ptr<Engine> {
    return std::make_unique<GpuEngine>(cfg, std::make_unique<CudnnStep>(cfg));
  };
  const nlohmann::json trained = trainer_run::expect_cnn_learns_and_loads_in(
      kStage08, make_stage08, {"--lr-schedule", "cosine"},
      {trainer_run::stage02_loader(), trainer_run::stage05_loader(), {{"06_cudnn", "Stage 06 (test)"}, make_stage06}});
  ASSERT_TRUE(trained.contains("stage_results")) << "the training run wrote no stage_results";
  EXPECT_EQ(trained.at("stage_results").at("kernels_per_step").get<int>(), 9);
}

TEST(Stage08_Trainer, MlpLearnsWithThePersistentKernelToo) {
  SKIP_WITHOUT_GPU();
  const auto r = run_with_json(
      kStage08, [](const EngineConfig& cfg) { return make_fused_engine(cfg, FusedOptions{false, true}); },
      {"--model", "mlp", "--dataset", "synthetic", "--limit", "1280", "--epochs", "3"}, "s08_mlp_persistent.json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const nlohmann::json& j = r.json;
  EXPECT_TRUE(j.at("stage_results").at("persistent").get<bool>());
  EXPECT_EQ(j.at("stage_results").at("kernels_per_step").get<int>(), 1);
  EXPECT_GT(j.at("epochs")[2].at("test_accuracy").get<double>(), 0.6);
}

// A spec the kernels cannot fuse is a usage error (exit 2) naming the layer, found
// before the GPU is touched (so this test runs without one).
TEST(Stage08_Trainer, RefusesASpecItCannotFuseNamingTheLayer) {
  const auto r = run_with_json(kStage08, make_stage08,
                               {"--arch", "conv8k3p1s2,relu,pool2,fc10", "--dataset", "synthetic", "--limit", "64"},
                               "s08_refused.json");
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("layer 1 'conv8k3p1s2'"), std::string::npos) << r.err;
}
