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
#include <optional>
#include <string>

#include "common/model/arch.hpp"
#include "common/train/cli.hpp"
#include "common/train/engine.hpp"

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
  kExitDiverged = 4,        ///< the loss of a step (or, for engines that report it once per epoch, of an epoch) was NaN or Inf
  kExitInterrupted = 130,   ///< stopped by Ctrl-C or SIGTERM after a step, with a checkpoint saved (128 + SIGINT, as shells report Ctrl-C)
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
/// for --epochs epochs (`--epochs 0`, allowed only with --save, trains
/// nothing: the report and the model file are those of the initial weights); epoch e (1-based on screen) is passed to
/// Engine::train_epoch as e - 1, the index course::epoch_order takes. Each
/// epoch shows a progress bar, then one line:
///
///     epoch  3/10  loss 0.3412  train 87.61%  test 86.90%  4.21 s  14252 img/s
///
/// where the seconds and images/s cover the training pass alone (the test
/// evaluation is timed separately and shown with --verbose). With
/// --val-fraction, the held-out validation set (DataSplit::val) is evaluated
/// every epoch with Engine::evaluate() as the test set is, before it, and the
/// line shows it between train and test:
///
///     epoch  3/10  loss 0.3412  train 87.61%  val loss 0.3712  val 86.10%  test 86.90%  4.21 s  14252 img/s
///
/// (--json: val_loss, val_accuracy and val_eval_seconds in each epoch). With
/// --loss mse and an engine that computes it (Engine::reports_mae()), the mean
/// absolute error of the outputs follows each loss and precedes the test accuracy:
///
///     epoch  3/10  loss 0.0291  MAE 0.0718  train 91.20%  test MAE 0.0735  test 90.40%  0.21 s  38095 img/s
///
/// (--json: train_mae, test_mae, and val_mae with a validation set). At the end:
/// the final test accuracy, the per-class table, the confusion matrix, the
/// --profile table (per-layer forward and backward ms per batch of the last
/// epoch), the --save model file and the --json file (written atomically).
///
/// Safety (docs/robustness.md):
/// - A NaN or Inf loss stops the run with kExitDiverged and a message naming
///   the epoch and the step and suggesting a smaller --lr. The step is known
///   when the engine reports its loss per batch (Engine::reports_batch_loss())
///   or throws course::NonFiniteLoss (the GPU engines, which check their loss
///   on the device a few steps late and stop there); otherwise the check
///   happens once per epoch and the message says so.
/// - `--checkpoint-every N` saves a checkpoint (common/train/checkpoint.hpp) after
///   every N-th epoch, atomically, to `--checkpoint FILE` (default: the
///   --resume file, else `<stage id>.ckpt`); a checkpoint that cannot be
///   written is a warning, and training goes on.
/// - `--resume FILE` restores the parameters and the optimizer state
///   (Engine::set_optimizer_state()), builds the engine with the choices the
///   checkpoint recorded (EngineConfig::engine_state: stage 06's conv
///   algorithms, not measured again) and continues at the epoch and step
///   saved, up to --epochs: same seed and settings, bit-identical parameters
///   to a run never stopped (an engine whose runs differ in the last bits says so,
///   Engine::nondeterminism(), and the trainer prints it). Other data is
///   refused; other settings are warned about.
/// - Ctrl-C (SIGINT) or SIGTERM during training finishes the current step,
///   saves a checkpoint, prints the command that continues the run and
///   returns kExitInterrupted; a second Ctrl-C ends the program at once. A
///   stop inside an epoch resumes inside it: the engine is given the examples
///   that epoch had left (course::remaining_examples()). The engine decides
///   where a requested stop happens (Engine::stop_requested(): stage 09's
///   ranks stop together at the end of an epoch).
/// - An engine that is one process of several and not the one that speaks for
///   the run (Engine::writes_files() false: stage 09's ranks but rank 0) trains
///   as the others do and writes no model, checkpoint or JSON file.
int run_trainer(int argc, char** argv, const StageInfo& stage, const EngineFactory& make_engine,
                const std::function<void(CLI::App&)>& extra_options = {});

/// The learning rate of epoch `epoch` (0-based) of `epochs` under `schedule`:
/// "constant" gives `lr` every epoch; "cosine" gives lr * (1 + cos(pi * epoch / epochs)) / 2,
/// from `lr` at the first epoch down towards 0 at the last. Every stage uses it, so
/// the same options give the same rates everywhere.
double scheduled_learning_rate(double lr, const std::string& schedule, int epoch, int epochs);

/// The rate --lr gives a step of --batch examples: lr under --lr-scaling none; under linear,
/// lr * batch / lr_reference_batch (Goyal et al., 2017: k times the batch, k times the rate, so that
/// k small steps and one large one move the weights alike while the gradient changes little).
double scaled_learning_rate(const TrainerOptions& o);

/// The rate of the run's step `step` (0-based, counted over every epoch) in epoch `epoch` (0-based):
/// the scaled rate under the schedule, times (step + 1) / warmup_steps while step < warmup_steps.
/// A large batch's scaled rate diverges at the start, where the weights are random and the gradient
/// large; the warm-up reaches it once training has settled.
double step_learning_rate(const TrainerOptions& o, int epoch, long step);

/// The canonical architecture spec a run builds, for examples of shape
/// `input` in `classes` classes:
/// - `--arch`: the spec as given (canonical form);
/// - else `--layers`: course::spec_from_layer_sizes with `--activation`;
/// - else the named `--model`, with its ReLUs replaced by `--activation` and
///   its last layer sized to `classes` (so `mlp` also runs a 3-class CSV set);
///
/// then every leaky ReLU takes `--leaky-slope` (course::with_leaky_slope) and
/// `--output sigmoid` appends the output activation (course::with_output_activation),
/// so both are part of the spec a model file carries.
///
/// Throws std::invalid_argument for a spec that does not parse.
std::string resolve_arch_spec(const TrainerOptions& options, Shape3 input, int classes);

/// The input a run's data must be turned into, for a named model defined on its
/// own input (course::named_model_input: m0 is 3x32x32, m1 .. m4 3x40x40), or
/// nullopt. The trainer then resizes and converts the examples to it (as
/// `--resize H x W --channels C` would, nothing where they have that shape
/// already) and the data line says so. Only when the run names no input
/// itself: no --resize, no --channels, no --arch or --layers; and never for a
/// csv set, whose examples are feature vectors, not pictures.
std::optional<Shape3> implied_model_input(const TrainerOptions& options);

/// Number of trainable parameters (weights and biases) of `arch` on inputs of shape `input`.
/// Throws std::invalid_argument like course::layer_shapes when the spec does not fit.
long count_parameters(const Arch& arch, Shape3 input, int classes);

}  // namespace course
