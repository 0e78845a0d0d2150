#include "common/train/cli.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <ostream>
#include <stdexcept>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "common/model/arch.hpp"
#include "common/data/data.hpp"
#include "common/data/load_data.hpp"
#include "common/data/data_transform.hpp"

namespace course {

namespace {

// The activations --activation accepts (the same words a spec uses).
const std::vector<std::string>& activation_names() {
  static const std::vector<std::string> names = {"relu", "leaky", "sigmoid", "tanh", "softplus"};
  return names;
}

const std::vector<std::string>& loss_names() {
  static const std::vector<std::string> names = {"cross-entropy", "mse"};
  return names;
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string s;
  for (std::size_t i = 0; i < items.size(); ++i) s += (i ? sep : "") + items[i];
  return s;
}

// A whole string read as a number; false for "", "abc", "1x" or a value out of range.
bool read_number(const std::string& text, double& value) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  value = std::strtod(text.c_str(), &end);
  return errno == 0 && end == text.c_str() + text.size() && std::isfinite(value);
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Validators with messages a learner can act on. CLI11 prefixes the flag's
// name, so "--epochs: must be at least 1, not 0".

// A number (a whole one when `whole`) that `accepts` lets through; any other is
// told it "must be <range>".
CLI::Validator number_validator(std::function<bool(double)> accepts, const std::string& range, bool whole = false) {
  return CLI::Validator(
      [accepts, range, whole](std::string& text) -> std::string {
        double v = 0;
        if (!read_number(text, v) || (whole && v != std::floor(v)))
          return "'" + text + "' is not a " + (whole ? "whole number" : "number");
        return accepts(v) ? "" : "must be " + range + ", not " + text;
      },
      "");
}

CLI::Validator at_least(double min) {
  return number_validator([min](double v) { return v >= min; }, "at least " + number_text(min));
}

CLI::Validator above_zero() { return number_validator([](double v) { return v > 0; }, "above 0"); }

CLI::Validator open_unit_interval() { return number_validator([](double v) { return v > 0 && v < 1; }, "in (0, 1)"); }

CLI::Validator zero_to_below_one() {
  return number_validator([](double v) { return v >= 0 && v < 1; }, "in [0, 1)");
}

CLI::Validator between(int lo, int hi) {
  return number_validator([lo, hi](double v) { return v >= lo && v <= hi; },
                          "from " + std::to_string(lo) + " to " + std::to_string(hi), /*whole=*/true);
}

CLI::Validator image_size() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          parse_image_size(text);
        } catch (const std::invalid_argument& e) {
          // CLI11 names the flag itself: the message without its "--resize: ".
          const std::string m = e.what();
          const auto colon = m.find(": ");
          return colon == std::string::npos ? m : m.substr(colon + 2);
        }
        return "";
      },
      "");
}

// Like CLI::IsMember, but the message lists the choices in words. `offered`, when given, is the part of
// `choices` that --help shows and a wrong word is told to choose from (the rest is accepted all the same).
CLI::Validator one_of(std::vector<std::string> choices, const std::string& what,
                      std::vector<std::string> offered = {}) {
  if (offered.empty()) offered = choices;
  const std::string shown = "{" + join(offered, ",") + "}";
  return CLI::Validator(
      [choices, offered, what](std::string& text) -> std::string {
        for (const auto& c : choices)
          if (c == text) return "";
        return "'" + text + "' is not a known " + what + " (choose from " + join(offered, ", ") + ")";
      },
      shown);
}

// The footer's examples. A dense-only stage's show its MLP where the others' show the CNN: an example is
// a command the stage runs.
std::string examples(const std::string& program, bool dense_only) {
  const std::vector<std::pair<std::string, std::string>> model_lines =
      dense_only ? std::vector<std::pair<std::string, std::string>>{
                       {"--epochs 5 --save mlp.bin", "train the MLP, save it"},
                       {"--load mlp.bin --evaluate", "evaluate the saved MLP"},
                       {"--layers 784,128:tanh,10", "an MLP by its sizes"},
                       {"--arch fc128,tanh,fc64,relu,fc10", "a custom model"},
                       {"--dataset synthetic --json run.json", "no data needed; JSON out"},
                       {"--resize 40 --channels 3 --limit 2000", "Fashion-MNIST as 3x40x40 pictures"}}
                 : std::vector<std::pair<std::string, std::string>>{
                       {"-m cnn --epochs 5 --save cnn.bin", "train the CNN, save it"},
                       {"-m cnn --load cnn.bin --evaluate", "evaluate the saved CNN"},
                       {"--layers 784,128:tanh,10", "an MLP by its sizes"},
                       {"--arch conv8k5,relu,pool2,fc10", "a custom model"},
                       {"--dataset synthetic --json run.json", "no data needed; JSON out"},
                       {"-m cnn --resize 40 --channels 3 --limit 2000", "Fashion-MNIST as 3x40x40 pictures"}};
  std::vector<std::pair<std::string, std::string>> lines = {{"", "train the MLP on Fashion-MNIST"}};
  lines.insert(lines.end(), model_lines.begin(), model_lines.end());
  const std::vector<std::pair<std::string, std::string>> rest = {
      {"--dataset folder --data-dir pics --resize 32", "train/<class>/ and test/<class>/ of PNG/JPEG"},
      {"--val-fraction 0.1", "hold out 10% for validation"},
      {"--dataset csv --data-dir tab --loss mse --output sigmoid", "sigmoid outputs, MSE (and MAE)"},
      {"--epochs 20 --checkpoint-every 1 --checkpoint run.ckpt", "a checkpoint after every epoch"},
      {"--epochs 20 --resume run.ckpt", "continue a stopped run"},
  };
  lines.insert(lines.end(), rest.begin(), rest.end());
  std::size_t width = 0;
  for (const auto& l : lines) width = std::max(width, program.size() + 1 + l.first.size());
  std::string text = "Examples:\n";
  for (const auto& l : lines) {
    std::string command = program + (l.first.empty() ? "" : " " + l.first);
    command.resize(width, ' ');
    text += "  " + command + "   " + l.second + "\n";
  }
  return text +
         "\nExit codes: 0 done, 1 data or model-file error, 2 usage error, 3 a task is not implemented yet,\n"
         "4 the loss diverged (NaN or Inf), 130 stopped by Ctrl-C (or SIGTERM) after saving a checkpoint.";
}

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::string stage_cannot_run(const StageInfo& stage, const std::string& spec) {
  if (!stage.dense_only) return "";
  Arch arch;
  try {
    arch = parse_arch(spec);
  } catch (const std::invalid_argument&) {
    return "";
  }
  std::vector<std::string> kinds;
  auto note = [&kinds](const std::string& kind) {
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
  };
  for (const LayerSpec& l : arch.layers) {
    if (l.kind == LayerKind::Conv) note("conv");
    if (is_pool(l.kind)) note("pool");
    if (l.kind == LayerKind::Flatten) note("flatten");
  }
  if (kinds.empty()) return "";
  std::string listed;
  for (std::size_t i = 0; i < kinds.size(); ++i)
    listed += (i == 0 ? "" : i + 1 == kinds.size() ? " and " : ", ") + kinds[i];
  return "it has " + listed + " layers, and stage " + stage.id + " has dense layers and activations only";
}

std::vector<std::string> stage_models(const StageInfo& stage) {
  std::vector<std::string> names;
  for (const std::string& name : named_models())
    if (stage_cannot_run(stage, named_model_spec(name)).empty()) names.push_back(name);
  return names;
}

std::string model_file_refusal(const StageInfo& stage, const std::string& path, const std::string& arch,
                               const std::string& saved_by) {
  const std::string why = stage_cannot_run(stage, arch);
  if (why.empty()) return "";
  return path + " holds architecture '" + arch + "'" + (saved_by.empty() ? "" : " (saved by stage " + saved_by + ")") +
         ", which stage " + stage.id + " cannot run: " + why +
         "; use it with the trainer of a stage that has those layers (stage 02 and later)";
}

void configure_trainer_app(CLI::App& app, TrainerOptions& o, const StageInfo& stage, const std::string& program) {
  app.name(program);
  app.description((stage.title.empty() ? "Stage " + stage.id : stage.title + " [" + stage.id + "]") +
                  "\nTrains a model on a data set and reports loss, accuracy and speed per epoch,"
                  " then per-class precision, recall, F1 and the confusion matrix.");
  app.footer(examples(program, stage.dense_only));
  app.get_formatter()->column_width(34);
  // A repeated flag takes its last value, so a script can append overrides to a command.
  app.option_defaults()->always_capture_default()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

  // ---- the model
  // A dense-only stage offers only the models it runs. It still parses the others, so that `-m cnn` reaches
  // its engine, which refuses it with the reason (and "cannot run", which tools/compare.py reads).
  app.add_option("-m,--model", o.model, "Named model (the lessons say what each is)")
                    ->check(one_of(named_models(), "model", stage_models(stage)))
                    ->type_name("NAME");
  auto* arch = app.add_option("--arch", o.arch,
                              std::string("Custom spec, e.g. ") +
                                  (stage.dense_only ? "fc128,relu,fc10" : "conv8k3p1,relu,pool2,fc10") +
                                  " (overrides --model)")
                   ->type_name("SPEC");
  auto* layers = app.add_option("--layers", o.layers, "MLP by its sizes, input first: 784,256,128,10 (or 256:tanh)")
                     ->type_name("SIZES");
  arch->excludes(layers);
  app.add_option("--activation", o.activation, "Hidden-layer activation for --model and --layers")
      ->check(one_of(activation_names(), "activation"))
      ->type_name("NAME");
  app.add_option("--loss", o.loss, "Loss function")->check(one_of(loss_names(), "loss"))->type_name("NAME");
  app.add_option("--output", o.output,
                 "Output activation after the last layer: none (the logits), or sigmoid (with --loss mse: the MSE "
                 "of sigmoid(z) against the one-hot targets)")
      ->check(one_of(output_activation_names(), "output activation"))
      ->type_name("NAME");
  app.add_option("--leaky-slope", o.leaky_slope, "Slope of leaky ReLU for x <= 0, in (0, 1)")
      ->check(open_unit_interval())
      ->type_name("A");

  // ---- the data
  app.add_option("--dataset", o.dataset,
                 "Data set (synthetic needs no files; folder: --data-dir with train/<class>/ and test/<class>/ "
                 "of PNG or JPEG pictures)")
      ->check(one_of(dataset_names(), "data set"))
      ->type_name("NAME");
  app.add_option("--data-dir", o.data_dir, "Folder with the data files (default: ./data, system folders)")
      ->type_name("DIR");
  app.add_option("--limit", o.limit, "Train on the first N training examples (0 = all)")
      ->check(at_least(0))
      ->type_name("N");
  app.add_option("--resize", o.resize,
                 "Resize every training and test example to N x N or H x W pixels (bilinear, pixel centres "
                 "as PyTorch's align_corners=False); default: the data set's size")
      ->check(image_size())
      ->type_name("N|HxW");
  app.add_option("--channels", o.channels,
                 "Convert every example to C channels: 1 -> C repeats the gray plane, C -> 1 averages "
                 "(default: the data set's)")
      ->check(between(1, kMaxChannels))
      ->type_name("C");
  app.add_option("--val-fraction", o.val_fraction,
                 "Hold out this share of the training set (after --limit), drawn with --seed, as a validation "
                 "set reported every epoch; in [0, 1)")
      ->check(zero_to_below_one())
      ->type_name("F");

  // ---- training
  app.add_option("--epochs", o.epochs, "Passes over the training set (>= 1; 0 with --save saves the initial weights)")
      ->check(at_least(0))
      ->type_name("N");
  app.add_option("--batch", o.batch, "Minibatch size (>= 1)")->check(at_least(1))->type_name("N");
  app.add_option("--lr", o.lr, "Learning rate (> 0) of the first epoch")->check(above_zero())->type_name("RATE");
  app.add_option("--lr-schedule", o.lr_schedule,
                 "How the learning rate changes from epoch to epoch: constant, or cosine "
                 "(lr * (1 + cos(pi * e / epochs)) / 2 for epoch e = 0, 1, ...)")
      ->check(CLI::IsMember({"constant", "cosine"}))
      ->type_name("{constant,cosine}");
  auto* scaling = app.add_option("--lr-scaling", o.lr_scaling,
                 "How the rate follows the batch: none (--lr as given), or linear (--lr is the rate of "
                 "--lr-reference-batch examples a step; a batch k times larger takes k times the rate)")
      ->check(CLI::IsMember({"none", "linear"}))
      ->type_name("{none,linear}");
  app.add_option("--lr-reference-batch", o.lr_reference_batch, "The batch --lr is meant for under --lr-scaling linear")
      ->needs(scaling)
      ->check(at_least(1))
      ->type_name("N");
  app.add_option("--warmup-steps", o.warmup_steps,
                 "Steps over which the rate rises linearly from rate/N to the full rate at the run's start "
                 "(0 = none); a large batch's scaled rate needs a few hundred")
      ->check(at_least(0))
      ->type_name("N");
  app.add_option("--momentum", o.momentum, "SGD momentum in [0, 1) (0 = plain SGD)")->check(zero_to_below_one())->type_name("M");
  app.add_option("--seed", o.seed, "Seed of the initial weights and the shuffling")
      ->type_name("N");
  if (stage.has_threads)
    app.add_option("--threads", o.threads, "CPU threads (0 = every core)")->check(at_least(0))->type_name("N");

  // ---- model files and output
  app.add_option("--save", o.save, "Save the trained model to FILE")->type_name("FILE");
  auto* load = app.add_option("--load", o.load, "Start from the model saved in FILE")->type_name("FILE");
  auto* evaluate = app.add_flag("--evaluate", o.evaluate, "Only evaluate the --load model on the test set")->needs(load);

  // ---- checkpoints
  app.add_option("--checkpoint-every", o.checkpoint_every,
                 "Save a checkpoint every N epochs (0 = only when stopped by Ctrl-C)")
      ->check(at_least(0))
      ->type_name("N");
  app.add_option("--checkpoint", o.checkpoint, "Where checkpoints go (default: the --resume FILE, else <stage>.ckpt)")
      ->type_name("FILE");
  app.add_option("--resume", o.resume, "Continue the run saved in checkpoint FILE up to --epochs")
      ->type_name("FILE")
      ->excludes(load)
      ->excludes(evaluate);
  app.add_flag("--profile", o.profile, "Time every layer, forward and backward (table at the end)");
  app.add_option("--json", o.json, "Write every result to FILE as JSON")->type_name("FILE");
  app.add_flag("--verbose", o.verbose, "Print more detail (data paths, evaluation times)");
  app.add_flag_callback("--no-progress", [&o]() { o.progress = false; }, "No progress bar");

  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return std::string("error: ") + e.what() + "\nRun with --help for the options.\n";
  });
}

std::optional<int> parse_trainer_options(int argc, const char* const* argv, const StageInfo& stage,
                                         TrainerOptions& options,
                                         const std::function<void(CLI::App&)>& extra_options, std::ostream& out,
                                         std::ostream& err) {
  CLI::App app;
  configure_trainer_app(app, options, stage, argc > 0 && argv[0] ? base_name(argv[0]) : stage.id);
  if (extra_options) extra_options(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e, out, err);
    // --help is a "success" exit of CLI11; every real error is a usage error.
    return code == 0 ? 0 : 2;
  }
  // --epochs 0 trains nothing: it is how a run writes the initial weights of its
  // seed to a model file (for a comparison that must start where the stages do),
  // and on its own it is a mistake.
  if (options.epochs == 0 && options.save.empty()) {
    err << "error: --epochs: must be at least 1, not 0 (0 is allowed only with --save FILE, which then saves the "
           "initial weights)\nRun with --help for the options.\n";
    return 2;
  }
  // An output activation feeds the MSE; softmax cross-entropy takes the logits themselves.
  if (options.output != "none" && options.loss != "mse") {
    err << "error: --output " << options.output << " needs --loss mse, not --loss " << options.loss
        << " (softmax cross-entropy has its own output, the softmax of the logits)\nRun with --help for the options.\n";
    return 2;
  }
  return std::nullopt;
}

nlohmann::json to_json(const TrainerOptions& o) {
  return {{"model", o.model},     {"arch", o.arch},       {"layers", o.layers},   {"activation", o.activation},
          {"loss", o.loss},       {"dataset", o.dataset}, {"data_dir", o.data_dir}, {"epochs", o.epochs},
          {"batch", o.batch},     {"lr", o.lr},           {"lr_schedule", o.lr_schedule},           {"lr_scaling", o.lr_scaling},
          {"lr_reference_batch", o.lr_reference_batch}, {"warmup_steps", o.warmup_steps}, {"momentum", o.momentum}, {"seed", o.seed},
          {"threads", o.threads}, {"save", o.save},       {"load", o.load},       {"evaluate", o.evaluate},
          {"limit", o.limit},     {"profile", o.profile}, {"json", o.json},       {"verbose", o.verbose},
          {"progress", o.progress}, {"checkpoint_every", o.checkpoint_every}, {"checkpoint", o.checkpoint},
          {"resume", o.resume}, {"resize", o.resize}, {"channels", o.channels},
          {"val_fraction", o.val_fraction}, {"output", o.output}, {"leaky_slope", o.leaky_slope}};
}

}  // namespace course
