// The GPU stages whose trainers the suites of this folder check, a row each:
// the stage, its trainer binary with the arguments of the runs from outside,
// and the engines the in-process runs build. The engine factories live here
// and nowhere else.
//
// Each GPU stage's test binary (sNN_tests_<track>) compiles this folder with
// COURSE_TEST_STAGE=NN (course_stage(... TRAINER_SAFETY), cmake/CourseStage.cmake)
// and runs only its own row: each stage links its own engine, and a stage's
// tests stay in its gate.
#pragma once

#include <filesystem>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "common/data/data.hpp"
#include "common/train/engine.hpp"
#include "common/train/trainer.hpp"
#include "trainer_process.hpp"
#include "trainer_safety.hpp"

#if COURSE_TEST_STAGE == 4
#include "04_cuda_matmul/mlp_step.hpp"
#include "common/gpu/gpu_engine.hpp"
#elif COURSE_TEST_STAGE == 5
#include "05_im2col_gemm/cnn_step.hpp"
#include "common/gpu/gpu_engine.hpp"
#elif COURSE_TEST_STAGE == 6
#include <regex>

#include "06_cudnn/cudnn_step.hpp"
#include "common/gpu/gpu_engine.hpp"
#elif COURSE_TEST_STAGE == 8
#include "08_fused/fused_step.hpp"
#else
#error "tests/gpu_stages: no row for this stage in gpu_stage_table.hpp (COURSE_TEST_STAGE)"
#endif

namespace course::gpu_stages {

/// An engine the in-process tests build, and what sets it apart.
struct EngineVariant {
  std::string what;  ///< e.g. "the CUDA graph", "the persistent kernel"
  EngineFactory make;
};

/// One GPU stage's row.
struct GpuStage {
  std::string name;  ///< "Stage04": ends every test's name, so a failure names its stage
  StageInfo info;    ///< for run_trainer in this process
  /// The trainer binary of this test binary's track, on a model big enough, in
  /// batches small enough (8000 synthetic examples, 1000 steps of 8), that an
  /// epoch lasts long enough for a signal from outside to land inside it; and,
  /// for a stage that measures its algorithms in each run, how to compare runs
  /// (trainer_safety::TrainerBinary).
  trainer_safety::TrainerBinary trainer;
  /// The trainer's arguments for a run that diverges at a learning rate of 1e6.
  std::vector<std::string> diverging_args;
  /// The engines of the in-process tests, run on 600 synthetic examples in
  /// batches of 32 with `in_process_args`.
  std::vector<EngineVariant> engines;
  std::vector<std::string> in_process_args;
  /// trainer_safety::expect_first_bad_step_named on the stage's engine built
  /// from a config (it drives the engine's own begin_epoch, train_batch and end_epoch).
  void (*expect_first_bad_step_named)(const EngineConfig& config, const Dataset& train);
};

/// The row's entry for an engine of type E built from the config alone.
template <typename E>
EngineVariant engine(std::string what) {
  return {std::move(what), [](const EngineConfig& c) -> std::unique_ptr<Engine> { return std::make_unique<E>(c); }};
}

/// The row's first-NaN-step check for an engine of type E.
template <typename E>
void first_bad_step_named(const EngineConfig& config, const Dataset& train) {
  trainer_safety::expect_first_bad_step_named([&] { return std::make_unique<E>(config); }, train);
}

#if COURSE_TEST_STAGE == 4 || COURSE_TEST_STAGE == 5 || COURSE_TEST_STAGE == 6
/// The row's entry for the common GPU engine on a stage's step model `Step`, with or without its CUDA graph.
template <typename Step>
EngineVariant step_engine(std::string what, bool graph) {
  return {std::move(what), [graph](const EngineConfig& c) -> std::unique_ptr<Engine> {
            return std::make_unique<GpuEngine>(c, std::make_unique<Step>(c), std::vector<NamedTensor>{},
                                               GpuEngineOptions{graph});
          }};
}

/// The first-NaN-step check for the common GPU engine on step model `Step` (its default: the graph on).
template <typename Step>
void first_bad_step_named_on_step(const EngineConfig& config, const Dataset& train) {
  trainer_safety::expect_first_bad_step_named(
      [&] { return std::make_unique<GpuEngine>(config, std::make_unique<Step>(config)); }, train);
}
#endif

inline void PrintTo(const GpuStage& s, std::ostream* os) { *os << s.name; }

inline std::filesystem::path trainer_exe(const std::string& nn) {
  return trainer_process::bin_dir() / ("s" + nn + "_train_" + trainer_process::track());
}

// The `cnn` in-process: 600 examples in batches of 32, 19 steps an epoch, the
// last of 24 examples (in graph stages: 18 graph replays and one uncaptured step;
// a resumed epoch trains a smaller data set, so its graph is captured anew).
const std::vector<std::string> kCnnInProcess = {"--dataset", "synthetic", "--limit", "600",
                                                "--batch",   "32",        "--model", "cnn"};
// The `mlp`: at a rate of 1e6 its activations overflow within a few steps. (The
// `cnn` may not diverge at all: its ReLUs can all die, and then only the last bias
// moves, by finite amounts; stage 02 on the CPU does that on 2000 synthetic examples.)
const std::vector<std::string> kMlpDiverging = {"--dataset", "synthetic", "--model", "mlp", "--batch", "32"};

#if COURSE_TEST_STAGE == 6
// The conv algorithms a run chose, from its --verbose report ("conv1 (conv16k3p1),
// batch 32: forward FFT 0.012 ms, ..."), without the measured times.
inline std::string chosen_algorithms(const std::string& out) {
  std::string chosen;
  const std::regex line("conv[0-9]+ \\([^)]*\\), batch [0-9]+: .*");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), line); it != std::sregex_iterator(); ++it)
    chosen += std::regex_replace(it->str(), std::regex("[0-9.]+ ms"), "") + "\n";
  return chosen;
}
#endif

/// The rows this test binary runs: its own stage's.
inline std::vector<GpuStage> gpu_stages() {
#if COURSE_TEST_STAGE == 4
  // The MLP of --layers: the trainer's is wide (1024, 1024) so that an epoch lasts.
  return {{"Stage04",
           {"04_cuda_matmul", "Stage 04 (test)"},
           {trainer_exe("04"), {"--dataset", "synthetic", "--layers", "784,1024,1024,10", "--batch", "8"}, {}},
           {"--dataset", "synthetic", "--layers", "784,1024,1024,10", "--batch", "8"},
           {step_engine<MlpStep>("the MLP step and its CUDA graph", true),
            step_engine<MlpStep>("the MLP step without the graph", false)},
           {"--dataset", "synthetic", "--limit", "600", "--batch", "32", "--layers", "784,64,10"},
           first_bad_step_named_on_step<MlpStep>}};
#elif COURSE_TEST_STAGE == 5
  return {{"Stage05",
           {"05_im2col_gemm", "Stage 05 (test)"},
           {trainer_exe("05"), {"--dataset", "synthetic", "--model", "cnn", "--batch", "8"}, {}},
           kMlpDiverging,
           {step_engine<CnnStep>("the CNN step and its CUDA graph", true),
            step_engine<CnnStep>("the CNN step without the graph", false)},
           kCnnInProcess,
           first_bad_step_named_on_step<CnnStep>}};
#elif COURSE_TEST_STAGE == 6
  // Every step of the trainer's epoch is a graph replay. cudnnFind times the
  // algorithms under whatever else runs on the GPU (parallel ctest), so two runs
  // may choose differently: the resumed run takes those its checkpoint recorded,
  // and the uninterrupted run takes them with --conv-algos-from, and then every
  // run compared does the same arithmetic and they must agree bit for bit.
  return {{"Stage06",
           {"06_cudnn", "Stage 06 (test)"},
           {trainer_exe("06"),
            {"--dataset", "synthetic", "--model", "cnn", "--batch", "8", "--verbose"},
            chosen_algorithms,
            [](const std::string& checkpoint) { return std::vector<std::string>{"--conv-algos-from", checkpoint}; },
            "2 of 2 conv layers at batch 8 run the recorded algorithms (not measured again)"},
           kMlpDiverging,
           {step_engine<CudnnStep>("the cuDNN step and its CUDA graph", true)},
           kCnnInProcess,
           first_bad_step_named_on_step<CudnnStep>}};
#elif COURSE_TEST_STAGE == 8
  // Every step of the trainer's epoch is a graph replay; in process, also the
  // persistent kernel, whose phases a resumed epoch uploads anew. Stage 08 adds
  // no float with an atomic, so every comparison is bit for bit.
  return {{"Stage08",
           {"08_fused", "Stage 08 (test)"},
           {trainer_exe("08"), {"--dataset", "synthetic", "--model", "cnn", "--batch", "8"}, {}},
           kMlpDiverging,
           {{"the fused step and the engine's CUDA graph",
             [](const EngineConfig& c) -> std::unique_ptr<Engine> { return make_fused_engine(c); }},
            {"the fused step as one persistent kernel",
             [](const EngineConfig& c) -> std::unique_ptr<Engine> {
               FusedOptions persistent;
               persistent.persistent = true;
               return make_fused_engine(c, persistent);
             }}},
           kCnnInProcess,
           [](const EngineConfig& config, const Dataset& train) {
             trainer_safety::expect_first_bad_step_named([&] { return make_fused_engine(config); }, train);
           }}};
#endif
}

}  // namespace course::gpu_stages
