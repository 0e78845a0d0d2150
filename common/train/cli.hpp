/// @file cli.hpp
/// @brief The command line every trainer shares (CLI11), and what it fills in.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace CLI {
class App;
}

namespace course {

/// Everything the shared command line sets. The defaults are the course's defaults.
struct TrainerOptions {
  std::string model = "mlp";            ///< --model/-m: a named model (course::named_models())
  std::string arch;                     ///< --arch: a custom spec; overrides --model
  std::string layers;                   ///< --layers 784,256,128,10: an MLP by its sizes
  std::string activation = "relu";      ///< --activation: hidden activation for --model and --layers
  std::string loss = "cross-entropy";   ///< --loss: cross-entropy or mse
  std::string output = "none";          ///< --output: none, or sigmoid after the last layer (needs --loss mse)
  double leaky_slope = 0.01;            ///< --leaky-slope: leaky ReLU's slope for x <= 0, in (0, 1) (course::kDefaultLeakySlope)
  std::string dataset = "fashion-mnist";///< --dataset (course::dataset_names())
  std::string data_dir;                 ///< --data-dir: where the data files are ("" = the usual places)
  int epochs = 10;                      ///< --epochs, at least 1 (0 with --save: save the initial weights)
  int batch = 64;                       ///< --batch, at least 1
  double lr = 0.02;                     ///< --lr, above 0: the rate of the first epoch
  std::string lr_schedule = "cosine";   ///< --lr-schedule: constant, or cosine (decays to 0 over the run)
  std::string lr_scaling = "none";      ///< --lr-scaling: none, or linear (--lr x batch / --lr-reference-batch)
  int lr_reference_batch = 64;          ///< --lr-reference-batch: the batch --lr is meant for, under linear
  int warmup_steps = 0;                 ///< --warmup-steps N: the rate rises linearly over the first N steps
  double momentum = 0.9;                ///< --momentum, in [0, 1)
  std::uint64_t seed = 42;              ///< --seed: initial weights, shuffling and the synthetic set
  int threads = 0;                      ///< --threads (CPU stages): 0 = every core
  std::string save;                     ///< --save FILE: write the trained model
  std::string load;                     ///< --load FILE: start from (or evaluate) a saved model
  bool evaluate = false;                ///< --evaluate: evaluate the --load model on the test set only
  int checkpoint_every = 0;             ///< --checkpoint-every N: save a checkpoint every N epochs (0 = only on Ctrl-C)
  std::string checkpoint;               ///< --checkpoint FILE: where checkpoints go ("" = the --resume file, else STAGE_ID.ckpt)
  std::string resume;                   ///< --resume FILE: continue the run saved in a checkpoint
  long limit = 0;                       ///< --limit N: train on the first N examples (0 = all)
  std::string resize;                   ///< --resize N or HxW: resize every example, bilinearly ("" = keep)
  int channels = 0;                     ///< --channels C: 1 -> C repeats the gray plane, C -> 1 averages (0 = keep)
  double val_fraction = 0;              ///< --val-fraction F: hold out this share of the training set, in [0, 1)
  bool profile = false;                 ///< --profile: time every layer
  std::string json;                     ///< --json FILE: every result, machine-readable
  bool verbose = false;                 ///< --verbose: more detail
  bool progress = true;                 ///< false with --no-progress
};

/// What a stage tells the shared trainer about itself.
struct StageInfo {
  std::string id;            ///< the stage folder, e.g. "01_fc_softmax"
  std::string title;         ///< one line, e.g. "dense layers and softmax on the CPU"
  bool has_threads = false;  ///< true for CPU stages that take --threads
  /// true for a stage of dense layers and activations only (stage 01): its --help offers no model with conv,
  /// pool or flatten layers, and a model file of one is refused as such (course::stage_cannot_run).
  bool dense_only = false;
};

/// Why `stage` cannot run the architecture `spec` (a spec string, as a model file records it), or "" when
/// it can as far as its layers go: a dense-only stage cannot run conv, pool or flatten layers ("it has conv
/// and pool layers, and stage 01_fc_softmax has dense layers and activations only"). A spec that does not
/// parse is the model file's or the engine's to reject: "".
std::string stage_cannot_run(const StageInfo& stage, const std::string& spec);

/// The named models (course::named_models()) whose layers `stage` can run: what its --help offers.
std::vector<std::string> stage_models(const StageInfo& stage);

/// The error of --load or --resume FILE when FILE holds an architecture `arch` (saved by stage `saved_by`,
/// "" when unknown) whose layers `stage` cannot run, or "" when it can. Said instead of the usual advice
/// to pass the --model/--arch the file was trained with, which this stage would refuse in turn.
std::string model_file_refusal(const StageInfo& stage, const std::string& path, const std::string& arch,
                               const std::string& saved_by);

/// Adds every shared flag to `app`, bound to `options` (whose current values
/// become the defaults shown by --help), with its checks: --epochs at least 0
/// (parse_trainer_options() allows 0 only with --save), --batch at least 1,
/// --lr above 0, --momentum in [0, 1), --limit and --threads at least 0, --model, --dataset, --loss, --activation
/// and --output from their lists, --leaky-slope in (0, 1),
/// --resize N or HxW (sides 1 to course::kMaxResizeSide), --channels 1 to course::kMaxChannels,
/// --val-fraction in [0, 1),
/// --evaluate only with --load, --arch and --layers not together, --resume
/// neither with --load nor with --evaluate, --checkpoint-every at least 0. --threads
/// exists only when `stage.has_threads`. Sets the description, the footer of
/// examples (using `program`, the name the trainer was run as) and the
/// failure message.
void configure_trainer_app(CLI::App& app, TrainerOptions& options, const StageInfo& stage,
                           const std::string& program);

/// Parses a trainer's command line into `options`.
///
/// `extra_options`, when given, adds a stage's own flags to the app before
/// parsing (stage 03's `--parallel data|loops`, stage 04's `--kernel N`),
/// bound to variables the stage owns.
///
/// Returns std::nullopt when the trainer should run. Otherwise it has printed
/// what the user asked for or what went wrong and returns the exit code: 0
/// after --help (printed to `out`), 2 for a usage error (an unknown flag, a
/// missing or bad value), printed to `err` as CLI11's message naming the flag,
/// followed by "Run with --help for the options.". `--epochs 0` without
/// `--save` is a usage error too: 0 epochs only serve to save the initial
/// weights of the seed; so is `--output sigmoid` without `--loss mse`.
std::optional<int> parse_trainer_options(int argc, const char* const* argv, const StageInfo& stage,
                                         TrainerOptions& options,
                                         const std::function<void(CLI::App&)>& extra_options, std::ostream& out,
                                         std::ostream& err);

/// Every option as a JSON object (for --json), keyed by the flag names.
nlohmann::json to_json(const TrainerOptions& options);

}  // namespace course
