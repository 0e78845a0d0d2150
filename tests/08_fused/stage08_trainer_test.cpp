// The stage 08 trainer end to end, and model files across stages: a model saved by
// stage 08 loads in stage 02 (CPU), stage 05 (im2col on the GPU) and stage 06 (cuDNN)
// and gives the same test accuracy there.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "01_fc_softmax/cpu_engine.hpp"
#include "02_conv_pool/cnn.hpp"
#include "05_im2col_gemm/cnn_step.hpp"
#include "common/gpu/gpu_engine.hpp"
#include "06_cudnn/cudnn_engine.hpp"
#include "08_fused/fused_engine.hpp"
#include "common/trainer.hpp"
#include "s08_support.hpp"

using namespace course;

namespace {

// Runs a trainer in this process, as its command line would; returns the JSON it wrote,
// its exit code in *code and what it printed on stderr in *err.
nlohmann::json run(const StageInfo& stage, const EngineFactory& make, std::vector<std::string> args, int* code,
                   const std::string& json_name, std::string* err = nullptr) {
  const std::string json_path = ::testing::TempDir() + json_name;
  std::remove(json_path.c_str());
  args.insert(args.begin(), "trainer");
  for (const char* a : {"--json", json_path.c_str(), "--no-progress"}) args.push_back(a);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(&a[0]);
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  *code = run_trainer(static_cast<int>(argv.size()), argv.data(), stage, make);
  const std::string out = ::testing::internal::GetCapturedStdout(), error = ::testing::internal::GetCapturedStderr();
  if (err) *err = error;
  std::ifstream in(json_path);
  if (!in) return {};
  return nlohmann::json::parse(in);
}

const StageInfo kStage08{"08_fused", "Stage 08 (test)"};
const StageInfo kStage02{"02_conv_pool", "Stage 02 (test)"};
const StageInfo kStage05{"05_im2col_gemm", "Stage 05 (test)"};
const StageInfo kStage06{"06_cudnn", "Stage 06 (test)"};

std::unique_ptr<Engine> make_stage08(const EngineConfig& cfg) { return std::make_unique<FusedEngine>(cfg); }
std::unique_ptr<Engine> make_stage02(const EngineConfig& cfg) {
  return std::make_unique<CpuEngine>(cfg, make_cnn_layer<float>);
}
std::unique_ptr<Engine> make_stage05(const EngineConfig& cfg) {
  return std::make_unique<GpuEngine>(cfg, std::make_unique<CnnStep>(cfg));
}
std::unique_ptr<Engine> make_stage06(const EngineConfig& cfg) { return std::make_unique<CudnnEngine>(cfg, true); }

}  // namespace

TEST(Stage08_Trainer, CnnLearnsAndItsModelLoadsInStages02_05And06) {
  SKIP_WITHOUT_GPU();
  const std::string model = ::testing::TempDir() + "s08_cnn_model.bin";
  std::remove(model.c_str());
  int code = -1;
  const auto trained = run(kStage08, make_stage08,
                           {"--model", "cnn", "--dataset", "synthetic", "--limit", "1280", "--epochs", "3", "--lr",
                            "0.02", "--lr-schedule", "cosine", "--save", model},
                           &code, "s08_train.json");
  ASSERT_EQ(code, 0);
  ASSERT_EQ(trained.at("status"), "ok");
  const auto& epochs = trained.at("epochs");
  ASSERT_EQ(epochs.size(), 3u);
  EXPECT_LT(epochs[2].at("loss").get<double>(), 0.7 * epochs[0].at("loss").get<double>()) << "the loss did not fall";
  EXPECT_GT(epochs[2].at("test_accuracy").get<double>(), 0.6) << "test accuracy stayed near chance";
  EXPECT_EQ(trained.at("stage_results").at("kernels_per_step").get<int>(), 9);

  const long examples = trained.at("final").at("examples").get<long>();
  const long fused_correct = trained.at("final").at("correct").get<long>();
  const struct {
    const StageInfo& stage;
    EngineFactory make;
  } loaders[] = {{kStage02, make_stage02}, {kStage05, make_stage05}, {kStage06, make_stage06}};
  for (const auto& loader : loaders) {
    const auto evaluated = run(loader.stage, loader.make,
                               {"--model", "cnn", "--dataset", "synthetic", "--load", model, "--evaluate"}, &code,
                               "s" + loader.stage.id.substr(0, 2) + "_evaluate_s08.json");
    ASSERT_EQ(code, 0) << loader.stage.id;
    ASSERT_EQ(evaluated.at("status"), "evaluated") << loader.stage.id;
    EXPECT_EQ(evaluated.at("final").at("examples").get<long>(), examples) << loader.stage.id;
    const long correct = evaluated.at("final").at("correct").get<long>();
    // The same weights with other kernels: predictions can only differ where two
    // classes' scores tie to within float rounding, at most 1 example in 1000.
    EXPECT_LE(std::labs(fused_correct - correct), std::max(1L, examples / 1000))
        << "stage 08 got " << fused_correct << " of " << examples << " right, stage " << loader.stage.id
        << " with its saved model " << correct;
  }
}

TEST(Stage08_Trainer, MlpLearnsWithThePersistentKernelToo) {
  SKIP_WITHOUT_GPU();
  int code = -1;
  const auto j = run(kStage08,
                     [](const EngineConfig& cfg) { return std::make_unique<FusedEngine>(cfg, FusedOptions{false, true}); },
                     {"--model", "mlp", "--dataset", "synthetic", "--limit", "1280", "--epochs", "3"}, &code,
                     "s08_mlp_persistent.json");
  ASSERT_EQ(code, 0);
  EXPECT_TRUE(j.at("stage_results").at("persistent").get<bool>());
  EXPECT_EQ(j.at("stage_results").at("kernels_per_step").get<int>(), 1);
  EXPECT_GT(j.at("epochs")[2].at("test_accuracy").get<double>(), 0.6);
}

// A spec the kernels cannot fuse is a usage error (exit 2) naming the layer, found
// before the GPU is touched (so this test runs without one).
TEST(Stage08_Trainer, RefusesASpecItCannotFuseNamingTheLayer) {
  int code = -1;
  std::string err;
  run(kStage08, make_stage08, {"--arch", "conv8k3p1s2,relu,pool2,fc10", "--dataset", "synthetic", "--limit", "64"},
      &code, "s08_refused.json", &err);
  EXPECT_EQ(code, kExitUsage);
  EXPECT_NE(err.find("layer 1 'conv8k3p1s2'"), std::string::npos) << err;
}
