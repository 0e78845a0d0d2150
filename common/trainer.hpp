/// @file trainer.hpp
/// @brief The shared trainer: everything a stage's main() needs beyond its Engine.
///
/// A stage's trainer is three lines:
///
/// @code
/// int main(int argc, char** argv) {
///   return course::run_trainer(argc, argv, {"01_fc_softmax", "dense layers on the CPU"},
///                              [](const course::EngineConfig& c) { return make_engine(c); });
/// }
/// @endcode
///
/// so every stage has the same command line, the same output and the same
/// JSON, and two stages compare figure for figure.
#pragma once

#include <functional>
#include <string>

#include "common/arch.hpp"
#include "common/cli.hpp"
#include "common/engine.hpp"

namespace CLI {
class App;
}

namespace course {

/// The exit codes of every trainer (also listed in --help).
enum TrainerExit : int {
  kExitOk = 0,              ///< done
  kExitError = 1,           ///< a data or model-file error (the message names the file), or another runtime error
  kExitUsage = 2,           ///< a bad command line, or a model that does not fit the data or the stage
  kExitNotImplemented = 3,  ///< an exercise hole was reached (course::NotImplemented): the message names the task
  kExitDiverged = 4,        ///< the mean loss of an epoch was NaN or Inf
};

/// Runs a whole trainer and returns its exit code; never throws.
///
/// In order: parses the command line (extra_options adds the stage's own
/// flags); loads the data (course::load_data, printing its note, and a
/// warning on stderr when it fell back to the synthetic set); resolves the
/// architecture (resolve_arch_spec()) and checks it against the data
/// (course::layer_shapes); builds the EngineConfig (--threads 0 = every core)
/// and the engine. With --load it reads the model file, checks that it fits
/// (course::check_model_matches, then every tensor's name and shape) and
/// sets the parameters; with --evaluate it then evaluates the test set,
/// prints the report and stops. Otherwise it prints a header line and trains
/// for --epochs epochs; epoch e (1-based on screen) is passed to
/// Engine::train_epoch as e - 1, the index course::epoch_order takes. Each
/// epoch shows a progress bar, then one line:
///
///     epoch  3/10  loss 0.3412  train 87.61%  test 86.90%  4.21 s  14252 img/s
///
/// where the seconds and images/s cover the training pass alone (the test
/// evaluation is timed separately and shown with --verbose). At the end:
/// the final test accuracy, the per-class table, the confusion matrix, the
/// --profile table (per-layer forward and backward ms per batch of the last
/// epoch), the --save model file and the --json file (written atomically).
int run_trainer(int argc, char** argv, const StageInfo& stage, const EngineFactory& make_engine,
                const std::function<void(CLI::App&)>& extra_options = {});

/// The canonical architecture spec a run builds, for examples of shape
/// `input` in `classes` classes:
/// - `--arch`: the spec as given (canonical form);
/// - else `--layers`: course::spec_from_layer_sizes with `--activation`;
/// - else the named `--model`, with its ReLUs replaced by `--activation` and
///   its last layer sized to `classes` (so `mlp` also runs a 3-class CSV set).
///
/// Throws std::invalid_argument for a spec that does not parse.
std::string resolve_arch_spec(const TrainerOptions& options, Shape3 input, int classes);

/// Number of trainable parameters (weights and biases) of `arch` on inputs of shape `input`.
/// Throws std::invalid_argument like course::layer_shapes when the spec does not fit.
long count_parameters(const Arch& arch, Shape3 input, int classes);

}  // namespace course
