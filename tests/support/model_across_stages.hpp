// A trainer run in the test's process that writes its JSON, and the check that
// a model file one stage saved gives the same test accuracy in the stages that
// load it (the trainer tests of the GPU stages).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/train/engine.hpp"
#include "common/train/trainer.hpp"
#include "trainer_run.hpp"

namespace course::trainer_run {

struct JsonRunResult : RunResult {
  nlohmann::json json;  ///< what the run wrote with --json (null when it wrote nothing)
};

/// The trainer in this process as `trainer ARGS --json FILE --no-progress`, FILE being
/// `json_name` in GoogleTest's temporary folder (removed first, so that an old file is never read).
inline JsonRunResult run_with_json(const StageInfo& stage, const EngineFactory& make, std::vector<std::string> args,
                                   const std::string& json_name) {
  const std::string json_path = ::testing::TempDir() + json_name;
  std::remove(json_path.c_str());
  args.insert(args.begin(), "trainer");
  for (const char* a : {"--json", json_path.c_str(), "--no-progress"}) args.push_back(a);
  JsonRunResult r;
  static_cast<RunResult&>(r) = run_in_process(stage, make, std::move(args));
  std::ifstream in(json_path);
  if (in) r.json = nlohmann::json::parse(in);
  return r;
}

/// A stage's engine, to evaluate a model file another stage saved.
struct StageEngine {
  StageInfo stage;
  EngineFactory make;
};

/// The `cnn` model file `model`, saved by stage `by` in the run whose JSON is
/// `trained`, evaluated on the synthetic set by each of `loaders`: every one
/// evaluates as many examples and gets as many right, up to ties. Each writes
/// its JSON to s<NN>_evaluate<json_tag>.json.
inline void expect_loaders_evaluate_the_model_alike(const std::string& model, const nlohmann::json& trained,
                                                    const std::string& by, const std::vector<StageEngine>& loaders,
                                                    const std::string& json_tag) {
  const long examples = trained.at("final").at("examples").get<long>();
  const long trained_correct = trained.at("final").at("correct").get<long>();
  for (const StageEngine& loader : loaders) {
    const JsonRunResult evaluated =
        run_with_json(loader.stage, loader.make, {"--model", "cnn", "--dataset", "synthetic", "--load", model, "--evaluate"},
                      "s" + loader.stage.id.substr(0, 2) + "_evaluate" + json_tag + ".json");
    ASSERT_EQ(evaluated.code, 0) << loader.stage.id << ":\n" << evaluated.out << evaluated.err;
    ASSERT_EQ(evaluated.json.at("status"), "evaluated") << loader.stage.id;
    EXPECT_EQ(evaluated.json.at("final").at("examples").get<long>(), examples) << loader.stage.id;
    const long correct = evaluated.json.at("final").at("correct").get<long>();
    // The same weights on another device or with other kernels: predictions can
    // only differ where two classes' scores tie to within float rounding, at
    // most 1 example in 1000.
    EXPECT_LE(std::labs(trained_correct - correct), std::max(1L, examples / 1000))
        << "stage " << by << " got " << trained_correct << " of " << examples << " right, stage " << loader.stage.id
        << " with its saved model " << correct;
  }
}

}  // namespace course::trainer_run
