// The stage 06 trainer end to end, and model files across stages: a model
// saved by stage 06 loads in stage 02 (CPU) and stage 05 (im2col on the GPU)
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
#include "common/trainer.hpp"
#include "s06_support.hpp"

using namespace course;

namespace {

// Runs a trainer in this process, as its command line would, and returns the JSON it wrote.
nlohmann::json run(const StageInfo& stage, const EngineFactory& make, std::vector<std::string> args, int* code,
                   const std::string& json_name) {
  const std::string json_path = ::testing::TempDir() + json_name;
  std::remove(json_path.c_str());
  args.insert(args.begin(), "trainer");
  for (const char* a : {"--json", json_path.c_str(), "--no-progress"}) args.push_back(a);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(&a[0]);
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  *code = run_trainer(static_cast<int>(argv.size()), argv.data(), stage, make);
  const std::string out = ::testing::internal::GetCapturedStdout(), err = ::testing::internal::GetCapturedStderr();
  std::ifstream in(json_path);
  if (!in) {
    ADD_FAILURE() << stage.id << " wrote no JSON; its output:\n" << out << err;
    return {};
  }
  if (*code != 0) ADD_FAILURE() << stage.id << " exited with " << *code << "; its output:\n" << out << err;
  return nlohmann::json::parse(in);
}

const StageInfo kStage06{"06_cudnn", "Stage 06 (test)"};
const StageInfo kStage02{"02_conv_pool", "Stage 02 (test)"};
const StageInfo kStage05{"05_im2col_gemm", "Stage 05 (test)"};

std::unique_ptr<Engine> make_stage06(const EngineConfig& cfg) { return std::make_unique<CudnnEngine>(cfg, true); }
std::unique_ptr<Engine> make_stage02(const EngineConfig& cfg) {
  return std::make_unique<CpuEngine>(cfg, make_cnn_layer<float>);
}
std::unique_ptr<Engine> make_stage05(const EngineConfig& cfg) {
  return std::make_unique<GpuEngine>(cfg, std::make_unique<CnnStep>(cfg));
}

}  // namespace

TEST(Stage06_Trainer, CnnLearnsAndItsModelLoadsInStages02And05) {
  S06_SKIP_WITHOUT_GPU();
  const std::string model = ::testing::TempDir() + "s06_cnn_model.bin";
  std::remove(model.c_str());
  int code = -1;
  const auto trained = run(kStage06, make_stage06,
                           {"--model", "cnn", "--dataset", "synthetic", "--limit", "1280", "--epochs", "3", "--lr",
                            "0.02", "--save", model},
                           &code, "s06_train.json");
  ASSERT_EQ(code, 0);
  ASSERT_EQ(trained.at("status"), "ok");
  const auto& epochs = trained.at("epochs");
  ASSERT_EQ(epochs.size(), 3u);
  EXPECT_LT(epochs[2].at("loss").get<double>(), 0.7 * epochs[0].at("loss").get<double>()) << "the loss did not fall";
  EXPECT_GT(epochs[2].at("test_accuracy").get<double>(), 0.6) << "test accuracy stayed near chance";

  const long examples = trained.at("final").at("examples").get<long>();
  const long gpu_correct = trained.at("final").at("correct").get<long>();
  const struct {
    const StageInfo& stage;
    EngineFactory make;
  } loaders[] = {{kStage02, make_stage02}, {kStage05, make_stage05}};
  for (const auto& loader : loaders) {
    const auto evaluated = run(loader.stage, loader.make,
                               {"--model", "cnn", "--dataset", "synthetic", "--load", model, "--evaluate"}, &code,
                               "s" + loader.stage.id.substr(0, 2) + "_evaluate.json");
    ASSERT_EQ(code, 0) << loader.stage.id;
    ASSERT_EQ(evaluated.at("status"), "evaluated") << loader.stage.id;
    EXPECT_EQ(evaluated.at("final").at("examples").get<long>(), examples) << loader.stage.id;
    const long correct = evaluated.at("final").at("correct").get<long>();
    // The same weights on another device or with other kernels: predictions can
    // only differ where two classes' scores tie to within float rounding, at
    // most 1 example in 1000.
    EXPECT_LE(std::labs(gpu_correct - correct), std::max(1L, examples / 1000))
        << "stage 06 got " << gpu_correct << " of " << examples << " right, stage " << loader.stage.id
        << " with its saved model " << correct;
  }
}

// A model file of another architecture is refused, with the message naming both.
TEST(Stage06_Trainer, RefusesAModelOfAnotherArchitecture) {
  S06_SKIP_WITHOUT_GPU();
  const std::string model = ::testing::TempDir() + "s06_mlp_model.bin";
  std::remove(model.c_str());
  int code = -1;
  run(kStage06, make_stage06, {"--model", "mlp", "--dataset", "synthetic", "--limit", "256", "--epochs", "1", "--save", model},
      &code, "s06_mlp.json");
  ASSERT_EQ(code, 0);
  std::vector<std::string> args = {"trainer", "--model", "cnn", "--dataset", "synthetic", "--load", model, "--evaluate",
                                   "--no-progress"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(&a[0]);
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  code = run_trainer(static_cast<int>(argv.size()), argv.data(), kStage06, make_stage06);
  ::testing::internal::GetCapturedStdout();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, kExitError);
  EXPECT_NE(err.find("architecture"), std::string::npos) << err;
}
