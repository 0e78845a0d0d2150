// The engines that evaluate a `cnn` model file a later GPU stage saved (the trainer
// tests of stages 06 and 08): stage 02 on the CPU, and stage 05 (im2col) on the GPU;
// and the test those stages share: train the `cnn`, save it, load it in the others.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "01_fc_softmax/cpu_engine.hpp"
#include "02_conv_pool/cnn.hpp"
#include "05_im2col_gemm/cnn_step.hpp"
#include "common/gpu/gpu_engine.hpp"
#include "model_across_stages.hpp"

namespace course::trainer_run {

inline StageEngine stage02_loader() {
  return {{"02_conv_pool", "Stage 02 (test)"}, [](const EngineConfig& cfg) -> std::unique_ptr<Engine> {
            return std::make_unique<CpuEngine>(cfg, make_cnn_layer<float>);
          }};
}

inline StageEngine stage05_loader() {
  return {{"05_im2col_gemm", "Stage 05 (test)"}, [](const EngineConfig& cfg) -> std::unique_ptr<Engine> {
            return std::make_unique<GpuEngine>(cfg, std::make_unique<CnnStep>(cfg));
          }};
}

/// Stage `stage` (`make`) trains the `cnn` on 1,280 synthetic examples for 3 epochs at lr 0.02 (and
/// `extra` flags), saving it to s<NN>_cnn_model.bin; it must learn (expect_learns), and each of
/// `loaders` must evaluate the saved file as the trained run did. Returns the training run's --json.
inline nlohmann::json expect_cnn_learns_and_loads_in(const StageInfo& stage, const EngineFactory& make,
                                                     const std::vector<std::string>& extra,
                                                     const std::vector<StageEngine>& loaders) {
  const std::string nn = stage.id.substr(0, 2);
  const std::string model = ::testing::TempDir() + "s" + nn + "_cnn_model.bin";
  std::remove(model.c_str());
  std::vector<std::string> args{"--model", "cnn", "--dataset", "synthetic", "--limit", "1280", "--epochs", "3",
                                "--lr", "0.02", "--save", model};
  args.insert(args.end(), extra.begin(), extra.end());
  const JsonRunResult trained = run_with_json(stage, make, args, "s" + nn + "_train.json");
  EXPECT_EQ(trained.code, 0) << trained.out << trained.err;
  if (trained.code != 0) return trained.json;
  expect_learns(trained.json, "the cnn on stage " + nn);
  expect_loaders_evaluate_the_model_alike(model, trained.json, nn, loaders, "_s" + nn);
  return trained.json;
}

}  // namespace course::trainer_run
