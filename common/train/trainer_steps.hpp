/// @file trainer_steps.hpp
/// @brief The steps of course::run_trainer's run, for the files that make it
/// (trainer.cpp: the setup and the order of the steps; trainer_epochs.cpp: the
/// epoch loop, checkpoints and stops; trainer_report.cpp: what a run prints and
/// writes). Not for a stage: a stage calls course::run_trainer (common/train/trainer.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/train/checkpoint.hpp"
#include "common/train/cli.hpp"
#include "common/data/data.hpp"
#include "common/train/engine.hpp"
#include "common/train/metrics.hpp"
#include "common/core/timer.hpp"

namespace course::trainer_steps {

using nlohmann::json;

/// A mistake on the command line found after parsing (a spec that does not
/// fit the data, a model the stage cannot run): exit code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// printf into a std::string: the tables and lines of the trainer are all
/// fixed-width numbers, which printf formats shortest.
std::string fmt(const char* format, ...);

/// part / whole (0 for an empty whole), and the same in percent.
double fraction(long part, long whole);
double percent(long part, long whole);

/// Where a run starts: `epoch` whole epochs done, then `step` batches
/// (`examples_done` examples) of the next one.
struct ResumePoint {
  int epoch = 0;
  int step = 0;
  long examples_done = 0;
};

/// An evaluation of a data set by the engine, with its predictions and how long it took.
struct Evaluation {
  EpochStats stats;
  std::vector<int> predictions;
  double seconds = 0;
};

/// Everything one run of the trainer knows, filled in step by step: the
/// setup (data, architecture, engine, a resumed checkpoint) and then what the
/// epochs leave for the report.
struct Run {
  Run(const TrainerOptions& options, const StageInfo& stage_info, const std::vector<std::string>& command_line,
      const Timer& timer)
      : o(options), stage(stage_info), command(command_line), total_timer(timer) {}

  TrainerOptions o;  ///< less the files to write, on a process that writes none (Engine::writes_files())
  const StageInfo& stage;
  const std::vector<std::string>& command;  ///< the command line, for the one that continues a stopped run
  const Timer& total_timer;
  json results;  ///< the --json file

  // ---- the setup
  DataSplit data;
  Arch arch;
  std::string spec;  ///< arch.spec()
  long parameters = 0;
  EngineConfig config;
  std::optional<Checkpoint> resumed;  ///< --resume's checkpoint, read before the engine is built
  std::unique_ptr<Engine> engine;
  bool writes_files = true;
  std::string header;  ///< the line that names the stage, device, model, data and settings

  // ---- training
  std::string checkpoint_path;
  std::uint64_t labels_hash = 0;
  ResumePoint start;  ///< epoch 0, step 0 unless resumed

  // ---- what the epochs leave for the report
  std::vector<LayerTime> last_times;  ///< --profile: the last epoch's per-layer times
  long last_batches = 0;              ///< and its batches
  Evaluation final_eval;              ///< the test set after the last epoch trained
  bool trained = false;               ///< at least one epoch was trained in this run

  const Dataset& train() const { return data.train; }
  const Dataset& test() const { return data.test; }
  const Dataset& val() const { return data.val; }  ///< empty without --val-fraction
  bool validating() const { return data.val.size() > 0; }
};

/// Evaluates `data` with the engine, checking that it returned a prediction for every example.
Evaluation evaluate_test(Engine& engine, const Dataset& data);

/// The final accuracy, the per-class table and the confusion matrix.
void print_final_report(const ClassificationReport& report, const Dataset& test);

/// The engine's own facts (Engine::stage_results()), when it has any.
void add_stage_results(json& results, const Engine& engine);

/// Writes the --json file atomically (nothing without --json).
void write_json(const TrainerOptions& o, const json& results);

/// The epochs from run.start to --epochs: each trained, evaluated, reported
/// and checkpointed (--checkpoint-every). Returns the exit code of a run that
/// stopped (diverged, Ctrl-C or SIGTERM, a checkpoint that could not be
/// saved), or nullopt when every epoch was trained.
std::optional<int> train_epochs(Run& run);

/// The end of a run that was not stopped: the report, the --profile table,
/// the --save model file and the --json file. Returns kExitOk.
int report_and_save(Run& run);

}  // namespace course::trainer_steps
