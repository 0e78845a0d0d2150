// The shared trainer (course::run_trainer) run inside a test's process, with a
// test engine or a stage's real one, and the bit-for-bit comparison of the
// tensors two runs end with.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/train/engine.hpp"
#include "common/train/trainer.hpp"

namespace course::trainer_run {

/// Stage 01's name and title: the tests that run the shared trainer on an engine of their own print it.
inline const StageInfo kStage01{"01_fc_softmax", "dense layers on the CPU", false};

struct RunResult {
  int code = -1;
  std::string out, err;
};

/// run_trainer with the command line `args` (the program's name first), its stdout and stderr captured;
/// `extra_options` adds a stage's own flags, as that stage's main() does.
inline RunResult run_in_process(const StageInfo& stage, const EngineFactory& make, std::vector<std::string> args,
                                const std::function<void(CLI::App&)>& extra_options = {}) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  RunResult r;
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  r.code = run_trainer(static_cast<int>(argv.size()), argv.data(), stage, make, extra_options);
  r.out = ::testing::internal::GetCapturedStdout();
  r.err = ::testing::internal::GetCapturedStderr();
  return r;
}

/// run_in_process with stage 01's program name (`s01_train`) before `args`.
inline RunResult run_as_stage01(std::vector<std::string> args, const EngineFactory& make,
                                const StageInfo& stage = kStage01) {
  args.insert(args.begin(), "s01_train");
  return run_in_process(stage, make, std::move(args));
}

/// run_in_process with `--json <file> --no-progress` added, `program` first: the JSON the trainer
/// wrote, or an empty one when it wrote none. The file is TempDir()/<program>_test.json. Its exit
/// status goes to *exit_code and, when `output` is given, its stdout and stderr to *output; without
/// `output`, a run that wrote no JSON is a test failure that shows them.
inline nlohmann::json run_for_json(const StageInfo& stage, const EngineFactory& make, const std::string& program,
                                   std::vector<std::string> args, int* exit_code, std::string* output = nullptr,
                                   const std::function<void(CLI::App&)>& extra_options = {}) {
  const std::string json_path = ::testing::TempDir() + program + "_test.json";
  std::remove(json_path.c_str());
  args.insert(args.begin(), program);
  for (const char* a : {"--json", json_path.c_str(), "--no-progress"}) args.push_back(a);
  const RunResult r = run_in_process(stage, make, std::move(args), extra_options);
  *exit_code = r.code;
  if (output) *output = r.out + r.err;
  std::ifstream in(json_path);
  if (!in) {
    if (!output) ADD_FAILURE() << "the trainer wrote no JSON; its output:\n" << r.out << r.err;
    return {};
  }
  return nlohmann::json::parse(in);
}

/// A run of three epochs that learned: it ended "ok", its loss fell below 0.7 of the first epoch's,
/// and its test accuracy left chance behind (above 0.6 on the synthetic set's ten classes).
inline void expect_learns(const nlohmann::json& j, const std::string& what) {
  ASSERT_EQ(j.at("status"), "ok") << what;
  const auto& epochs = j.at("epochs");
  ASSERT_EQ(epochs.size(), 3u) << what;
  EXPECT_LT(epochs[2].at("loss").get<double>(), 0.7 * epochs[0].at("loss").get<double>())
      << what << ": the loss did not fall";
  EXPECT_GT(epochs[2].at("test_accuracy").get<double>(), 0.6) << what << ": the test accuracy stayed near chance";
}

/// Passes when both lists hold the same tensors, names, shapes and every bit of every value.
inline ::testing::AssertionResult same_bits(const std::vector<NamedTensor>& a, const std::vector<NamedTensor>& b) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << a.size() << " tensors against " << b.size();
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || a[i].tensor.shape != b[i].tensor.shape)
      return ::testing::AssertionFailure() << "tensor " << i << ": " << a[i].name << " against " << b[i].name;
    const auto& x = a[i].tensor.data;
    const auto& y = b[i].tensor.data;
    std::size_t differ = 0, first = 0;
    for (std::size_t j = 0; j < x.size(); ++j)
      if (std::memcmp(&x[j], &y[j], sizeof(float)) != 0 && differ++ == 0) first = j;
    if (differ > 0)
      return ::testing::AssertionFailure() << a[i].name << ": " << differ << " of " << x.size()
                                           << " values differ, the first [" << first << "] " << x[first]
                                           << " against " << y[first];
  }
  return ::testing::AssertionSuccess();
}

}  // namespace course::trainer_run
