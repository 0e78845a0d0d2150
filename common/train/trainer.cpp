// The shared trainer, course::run_trainer (common/train/trainer.hpp): the options
// parsed, then the steps of a run in order (train_or_evaluate). Here: the
// setup before the first epoch (the data, the architecture, the engine, a
// model file or a checkpoint to start from) and --evaluate; the epochs are in
// trainer_epochs.cpp, the report and the files in trainer_report.cpp.
#include "common/train/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/train/checkpoint.hpp"
#include "common/data/data.hpp"
#include "common/data/load_data.hpp"
#include "common/data/data_transform.hpp"
#include "common/train/metrics.hpp"
#include "common/model/model_file.hpp"
#include "common/core/not_implemented.hpp"
#include "common/core/timer.hpp"
#include "common/train/trainer_steps.hpp"

namespace course {

namespace {

using namespace trainer_steps;

// What the header calls the model: its name, or how it was given.
std::string model_label(const TrainerOptions& o) {
  if (!o.arch.empty()) return "custom";
  if (!o.layers.empty()) return "layers " + o.layers;
  return o.model;
}

int resolve_threads(const TrainerOptions& o, const StageInfo& stage) {
  if (!stage.has_threads) return 1;
  if (o.threads > 0) return o.threads;
  const unsigned cores = std::thread::hardware_concurrency();  // 0 when unknown
  return cores > 0 ? static_cast<int>(cores) : 1;
}

// A model file must not only have the same architecture: each tensor must be
// the one the engine has, by name and shape, or set_parameters() would copy
// numbers into the wrong places.
void check_tensors_match(const std::vector<NamedTensor>& saved, const std::vector<NamedTensor>& expected,
                         const std::string& path, const StageInfo& stage, const std::string& what) {
  if (saved.size() != expected.size())
    throw ModelFileError("model file '" + path + "' holds " + std::to_string(saved.size()) + " tensors, but stage " +
                         stage.id + " has " + std::to_string(expected.size()) + " " + what + " for this model");
  for (std::size_t i = 0; i < saved.size(); ++i) {
    const auto& s = saved[i];
    const auto& e = expected[i];
    if (s.name != e.name || s.tensor.shape != e.tensor.shape)
      throw ModelFileError("model file '" + path + "' holds tensor " + std::to_string(i + 1) + " '" + s.name +
                           "' of shape " + s.tensor.shape_str() + ", but stage " + stage.id + " expects '" + e.name +
                           "' of shape " + e.tensor.shape_str());
  }
}

void warn_if_differs(const std::string& flag, bool differs, const std::string& now, const std::string& saved) {
  if (differs)
    std::cerr << "warning: " << flag << " " << now << " differs from the checkpoint's " << saved
              << ": the resumed run will not match an uninterrupted one\n";
}

// The engine's optimizer state, or a usage error naming the flag that needs it.
std::vector<NamedTensor> optimizer_state_or_usage_error(Engine& engine, const StageInfo& stage,
                                                        const std::string& flag) {
  try {
    return engine.get_optimizer_state();
  } catch (const CheckpointNotSupported& e) {
    throw UsageError(flag + ": stage " + stage.id + " cannot checkpoint (" + e.what() + ")");
  }
}

// ---- the steps before the first epoch ------------------------------------------

// Loads the data set (--dataset, --limit, --val-fraction, and the input a named
// model is defined on), says what it holds and records it in the JSON.
void load_training_data(Run& run) {
  const TrainerOptions& o = run.o;
  // resize and transform_why follow from the model below.
  DataOptions data_options{.dataset = o.dataset, .data_dir = o.data_dir, .limit = o.limit, .seed = o.seed,
                           .resize = {}, .channels = o.channels, .val_fraction = o.val_fraction, .transform_why = {}};
  // A named model defined on its own input (m0 .. m4) gets it, unless the command line names one.
  const std::optional<Shape3> model_input = implied_model_input(o);
  if (model_input) {
    data_options.resize = ImageSize{model_input->h, model_input->w};
    data_options.channels = model_input->c;
    data_options.transform_why = " for " + o.model + "'s input " + model_input->str() +
                                 " (--resize and --channels choose another)";
  }
  try {
    if (!o.resize.empty()) data_options.resize = parse_image_size(o.resize);
    run.data = load_data(data_options);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string(e.what()) + (model_input ? " (--model " + o.model + " is defined on " +
                                                                model_input->str() + ", which this run turns the data into)"
                                                          : std::string()));
  }
  const DataSplit& data = run.data;
  const Dataset& train = run.train();
  const Dataset& test = run.test();
  const Dataset& val = run.val();
  const bool validating = run.validating();
  std::cout << "data: " << data.note << "\n";
  if (data.synthetic_fallback)
    std::cerr << "warning: no " << o.dataset << " files were found, so this run uses the built-in synthetic set;"
              << " its accuracy says nothing about " << o.dataset << " (see --data-dir)\n";
  if (o.verbose)
    std::cout << "data: train " << train.size() << " examples from " << train.source << "\n"
              << (validating ? "data: val   " + std::to_string(val.size()) + " examples held out of the training set\n"
                             : std::string())
              << "data: test  " << test.size() << " examples from " << test.source << "\n"
              << "data: examples of " << train.shape.str() << ", " << train.classes << " classes\n";
  if (train.size() == 0) throw DataError("the training set of " + o.dataset + " is empty");
  run.results["data"] = {{"dataset", train.name},
                         {"note", data.note},
                         {"synthetic_fallback", data.synthetic_fallback},
                         {"train_examples", train.size()},
                         {"val_examples", val.size()},
                         {"test_examples", test.size()},
                         {"shape", train.shape.str()},
                         {"classes", train.classes},
                         {"class_names", train.class_names},
                         {"train_source", train.source},
                         {"test_source", test.source}};
}

// Resolves the architecture (--arch, --layers or --model) and checks it against
// the data and the loss; records it in the JSON.
void resolve_architecture(Run& run) {
  const TrainerOptions& o = run.o;
  const Dataset& train = run.train();
  Arch& arch = run.arch;
  long& parameters = run.parameters;
  try {
    arch = parse_arch(resolve_arch_spec(o, train.shape, train.classes));
    layer_shapes(arch, train.shape, train.classes);
    parameters = count_parameters(arch, train.shape, train.classes);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string(e.what()) + " (data set " + o.dataset + ": input " + train.shape.str() + ", " +
                     std::to_string(train.classes) + " classes)");
  }
  try {
    check_output_activation(arch, o.loss);  // a spec ending in sigmoid, given with --arch, and cross-entropy
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (o.leaky_slope != kDefaultLeakySlope && !has_leaky_relu(arch))
    std::cerr << "warning: --leaky-slope " << slope_text(o.leaky_slope) << " has no leaky ReLU to act on in "
              << arch.spec() << " (--activation leaky, or leaky in --arch / --layers)\n";
  run.spec = arch.spec();
  run.results["arch"] = {{"model", model_label(o)}, {"spec", run.spec}, {"parameters", parameters}};
}

// Builds the engine (EngineConfig from the options; --threads 0 is every
// core), with the choices a resumed run's checkpoint recorded.
void build_engine(Run& run, const EngineFactory& make_engine) {
  TrainerOptions& o = run.o;
  const StageInfo& stage = run.stage;
  const Dataset& train = run.train();
  EngineConfig& config = run.config;
  config = EngineConfig{.arch = run.arch, .input = train.shape, .classes = train.classes, .batch = o.batch,
                        .lr = o.lr, .momentum = o.momentum, .seed = o.seed, .loss = o.loss,
                        .threads = resolve_threads(o, stage), .profile = o.profile, .verbose = o.verbose,
                        .engine_state = {}};
  // A resumed run's checkpoint is read before its engine is built: the engine
  // takes the choices the run made (Engine::engine_state()) instead of making
  // them again, where making them again could choose otherwise (stage 06 times
  // its conv algorithms). The rest of the checkpoint is checked further down.
  if (!o.resume.empty()) {
    run.resumed = load_checkpoint(o.resume);
    config.engine_state = run.resumed->engine_state;
  }
  std::unique_ptr<Engine>& engine = run.engine;
  try {
    engine = make_engine(config);
  } catch (const std::invalid_argument& e) {
    throw UsageError("stage " + stage.id + " cannot run " + run.spec + ": " + e.what());
  }
  if (!engine) throw std::runtime_error("stage " + stage.id + " built no engine");
  run.writes_files = engine->writes_files();
  if (!run.writes_files) {
    o.save.clear();
    o.json.clear();
    o.checkpoint_every = 0;
  }
  run.results["device"] = engine->device();
  if (const std::vector<std::string> choices = engine->gpu_choices(); !choices.empty())
    run.results["gpu_choices"] = choices;
  run.results["threads"] = config.threads;
}

// --load: reads the model file, checks that it fits (the architecture, then
// every tensor's name and shape) and sets the engine's parameters.
void load_saved_model(Run& run) {
  const TrainerOptions& o = run.o;
  const Dataset& train = run.train();
  Engine& engine = *run.engine;
  if (o.load.empty()) return;
  ModelFile model = load_model(o.load);
  if (const std::string refusal = model_file_refusal(run.stage, o.load, model.arch, model.stage); !refusal.empty())
    throw ModelFileError(refusal);
  check_model_matches(model, run.spec, train.shape, train.classes, o.load);
  check_tensors_match(model.tensors, engine.get_parameters(), o.load, run.stage, "parameters");
  engine.set_parameters(model.tensors);
  std::cout << "loaded " << o.load << " (saved by stage " << (model.stage.empty() ? "?" : model.stage) << ")\n";
  run.results["loaded_from"] = o.load;
}

// "0.02", or "0.08 (0.02 x 256/64, linear scaling) warm-up 200 steps": the rate a step takes.
std::string rate_words(const TrainerOptions& o) {
  std::string words = fmt("%g", scaled_learning_rate(o));
  if (o.lr_scaling != "none")
    words += fmt(" (%g x %d/%d, %s scaling)", o.lr, o.batch, o.lr_reference_batch, o.lr_scaling.c_str());
  if (o.warmup_steps > 0) words += fmt(" warm-up %d steps", o.warmup_steps);
  return words;
}

// The line that names the stage, the device, the model, the data and the settings.
std::string run_header(const Run& run) {
  const TrainerOptions& o = run.o;
  const Dataset& train = run.train();
  return run.stage.id + " | " + run.engine->device() + " | " + model_label(o) + " " + run.spec + " (" +
         std::to_string(run.parameters) + " parameters) | " + train.name + " " + std::to_string(train.size()) +
         " train, " + (run.validating() ? std::to_string(run.val().size()) + " val, " : std::string()) +
         std::to_string(run.test().size()) + " test, " + train.shape.str() + " | " +
         fmt("batch %d  lr %s %s  momentum %g  seed %llu", o.batch, rate_words(o).c_str(), o.lr_schedule.c_str(),
             o.momentum, static_cast<unsigned long long>(o.seed));
}

// --evaluate: the test set's report for the loaded (or initial) weights, and no training.
int evaluate_only(Run& run) {
  const TrainerOptions& o = run.o;
  const Dataset& test = run.test();
  Engine& engine = *run.engine;
  json& results = run.results;
  std::cout << run.header << "\n";
  const Evaluation ev = evaluate_test(engine, test);
  const ClassificationReport report = classification_report(test.labels, ev.predictions, test.classes);
  if (o.verbose) std::cout << fmt("evaluation took %.2f s\n", ev.seconds);
  results["test_loss"] = ev.stats.seen > 0 ? ev.stats.loss_sum / static_cast<double>(ev.stats.seen) : 0.0;
  if (o.loss == "mse" && engine.reports_mae() && ev.stats.seen > 0) {  // the MAE beside the MSE
    results["test_mae"] = ev.stats.abs_error_sum / static_cast<double>(ev.stats.seen);
    std::cout << fmt("test loss %.4f  test MAE %.4f\n", results["test_loss"].get<double>(),
                     results["test_mae"].get<double>());
  }
  print_final_report(report, test);
  add_stage_results(results, engine);
  results["status"] = "evaluated";
  results["eval_seconds"] = ev.seconds;
  results["final"] = to_json(report, test.class_names);
  results["total_seconds"] = run.total_timer.seconds();
  std::cout.flush();
  write_json(o, results);
  return kExitOk;
}

// Where checkpoints go (--checkpoint, else the --resume file, else <stage id>.ckpt),
// and what a checkpointing run must hear first: a stage that cannot checkpoint
// is refused, one whose runs differ in the last bits says so.
void prepare_checkpoints(Run& run) {
  const TrainerOptions& o = run.o;
  Engine& engine = *run.engine;
  run.checkpoint_path = !o.checkpoint.empty() ? o.checkpoint
                        : !o.resume.empty()   ? o.resume
                                              : run.stage.id + ".ckpt";
  run.labels_hash = labels_fingerprint(run.train());
  if (o.checkpoint_every > 0) optimizer_state_or_usage_error(engine, run.stage, "--checkpoint-every");
  const std::string nondeterminism = engine.nondeterminism();
  if (!nondeterminism.empty() && (o.checkpoint_every > 0 || !o.resume.empty()))
    std::cerr << "note: " << nondeterminism << ", so a resumed run matches an uninterrupted one only to rounding,"
              << " not bit for bit\n";
  run.results["epochs"] = json::array();
}

// --resume: checks that the checkpoint continues a run of this model on this
// data (other settings are warned about), sets its parameters and optimizer
// state, and starts where it stopped.
void resume_from_checkpoint(Run& run) {
  const TrainerOptions& o = run.o;
  const Dataset& train = run.train();
  Engine& engine = *run.engine;
  json& results = run.results;
  const Checkpoint& c = *run.resumed;
  if (const std::string refusal = model_file_refusal(run.stage, o.resume, c.model.arch, c.model.stage);
      !refusal.empty())
    throw ModelFileError(refusal);
  check_model_matches(c.model, run.spec, train.shape, train.classes, o.resume);
  check_tensors_match(c.model.tensors, engine.get_parameters(), o.resume, run.stage, "parameters");
  check_tensors_match(c.optimizer, optimizer_state_or_usage_error(engine, run.stage, "--resume"), o.resume, run.stage,
                      "optimizer tensors");
  if (c.dataset != o.dataset || c.train_examples != train.size() || c.labels_hash != run.labels_hash)
    throw UsageError("checkpoint '" + o.resume + "' continues a run on " + std::to_string(c.train_examples) +
                     " training examples of " + c.dataset + ", but this run has " + std::to_string(train.size()) +
                     " of " + o.dataset +
                     (c.train_examples == train.size() && c.dataset == o.dataset ? " with other labels" : "") +
                     ": resume with the --dataset, --data-dir, --limit and --val-fraction of that run");
  warn_if_differs("--seed", o.seed != c.seed, std::to_string(o.seed), std::to_string(c.seed));
  warn_if_differs("--batch", o.batch != c.batch, std::to_string(o.batch), std::to_string(c.batch));
  warn_if_differs("--lr", o.lr != c.lr, fmt("%g", o.lr), fmt("%g", c.lr));
  warn_if_differs("--lr-schedule", o.lr_schedule != c.lr_schedule, o.lr_schedule, c.lr_schedule);
  warn_if_differs("--lr-scaling", o.lr_scaling != c.lr_scaling, o.lr_scaling, c.lr_scaling);
  warn_if_differs("--lr-reference-batch", o.lr_scaling != "none" && o.lr_reference_batch != c.lr_reference_batch,
                  std::to_string(o.lr_reference_batch), std::to_string(c.lr_reference_batch));
  warn_if_differs("--warmup-steps", o.warmup_steps != c.warmup_steps, std::to_string(o.warmup_steps),
                  std::to_string(c.warmup_steps));
  // A constant rate does not depend on --epochs; a schedule over the run does.
  warn_if_differs("--epochs", o.lr_schedule != "constant" && o.epochs != c.epochs, std::to_string(o.epochs),
                  std::to_string(c.epochs) + " (the " + o.lr_schedule + " schedule spans --epochs)");
  warn_if_differs("--momentum", o.momentum != c.momentum, fmt("%g", o.momentum), fmt("%g", c.momentum));
  warn_if_differs("--loss", o.loss != c.loss, o.loss, c.loss);
  engine.set_parameters(c.model.tensors);
  engine.set_optimizer_state(c.optimizer);
  run.start = {c.epoch, c.step, c.examples_done};
  results["epochs"] = json::parse(c.history);
  results["resumed_from"] = {{"file", o.resume}, {"epoch", c.epoch + 1}, {"step", c.step}};
  if (c.examples_done > 0)
    std::cout << "resumed " << o.resume << ": epoch " << c.epoch + 1 << ", after step " << c.step << " ("
              << c.examples_done << " of " << train.size() << " examples of that epoch done)\n";
  else
    std::cout << "resumed " << o.resume << " after epoch " << c.epoch << "\n";
}

// The run after parsing, step by step. Errors leave as exceptions; run_trainer() turns them into exit codes.
int train_or_evaluate(const TrainerOptions& options, const StageInfo& stage, const EngineFactory& make_engine,
                      const std::vector<std::string>& command, const Timer& total_timer) {
  Run run(options, stage, command, total_timer);
  run.results["stage"] = {{"id", stage.id}, {"title", stage.title}};
  run.results["options"] = to_json(run.o);
  load_training_data(run);
  resolve_architecture(run);
  build_engine(run, make_engine);
  load_saved_model(run);
  run.header = run_header(run);
  if (run.o.evaluate) return evaluate_only(run);
  prepare_checkpoints(run);
  if (run.resumed) resume_from_checkpoint(run);
  if (const std::optional<int> stopped = train_epochs(run)) return *stopped;
  return report_and_save(run);
}

// The spec of --arch, --layers or --model, before --leaky-slope and --output.
std::string given_arch_spec(const TrainerOptions& o, Shape3 input, int classes) {
  if (!o.arch.empty()) return parse_arch(o.arch).spec();
  if (!o.layers.empty()) return parse_arch(spec_from_layer_sizes(o.layers, o.activation, input.size(), classes)).spec();
  Arch arch = parse_arch(named_model_spec(o.model));
  const Arch act = parse_arch(o.activation);
  if (act.layers.size() != 1 || act.layers[0].kind != LayerKind::Activation)
    throw std::invalid_argument("--activation '" + o.activation + "' is not an activation");
  for (auto& layer : arch.layers)
    if (layer.kind == LayerKind::Activation) layer.act = act.layers[0].act;
  if (!arch.layers.empty() && arch.layers.back().kind == LayerKind::Dense) arch.layers.back().units = classes;
  return arch.spec();
}

}  // namespace

std::string resolve_arch_spec(const TrainerOptions& o, Shape3 input, int classes) {
  return with_output_activation(with_leaky_slope(parse_arch(given_arch_spec(o, input, classes)), o.leaky_slope),
                                o.output)
      .spec();
}

long count_parameters(const Arch& arch, Shape3 input, int classes) {
  const std::vector<Shape3> shapes = layer_shapes(arch, input, classes);
  long total = 0;
  Shape3 in = input;
  for (std::size_t i = 0; i < arch.layers.size(); ++i) {
    const LayerSpec& l = arch.layers[i];
    if (l.kind == LayerKind::Dense) total += in.size() * l.units + l.units;
    if (l.kind == LayerKind::Conv) total += static_cast<long>(l.units) * in.c * l.kernel * l.kernel + l.units;
    in = shapes[i];
  }
  return total;
}

std::optional<Shape3> implied_model_input(const TrainerOptions& o) {
  if (!o.arch.empty() || !o.layers.empty() || !o.resize.empty() || o.channels != 0 || o.dataset == "csv")
    return std::nullopt;
  return named_model_input(o.model);
}

double scheduled_learning_rate(double lr, const std::string& schedule, int epoch, int epochs) {
  if (schedule == "constant") return lr;
  if (schedule == "cosine") return lr * 0.5 * (1.0 + std::cos(M_PI * epoch / std::max(epochs, 1)));
  throw std::invalid_argument("unknown learning-rate schedule '" + schedule + "' (constant, cosine)");
}

double scaled_learning_rate(const TrainerOptions& o) {
  if (o.lr_scaling == "none") return o.lr;
  if (o.lr_scaling == "linear") return o.lr * o.batch / o.lr_reference_batch;
  throw std::invalid_argument("unknown learning-rate scaling '" + o.lr_scaling + "' (none, linear)");
}

double step_learning_rate(const TrainerOptions& o, int epoch, long step) {
  const double rate = scheduled_learning_rate(scaled_learning_rate(o), o.lr_schedule, epoch, o.epochs);
  if (step >= o.warmup_steps) return rate;
  return rate * static_cast<double>(step + 1) / o.warmup_steps;
}

int run_trainer(int argc, char** argv, const StageInfo& stage, const EngineFactory& make_engine,
                const std::function<void(CLI::App&)>& extra_options) {
  const Timer total_timer;
  // Whatever goes wrong ends here as a message and an exit code: a learner
  // should read what to do, never a core dump or "terminate called after...".
  auto fail = [](const std::string& message, int code) {
    std::cout.flush();
    std::cerr << message << std::endl;
    return code;
  };
  try {
    TrainerOptions options;
    if (auto code = parse_trainer_options(argc, argv, stage, options, extra_options, std::cout, std::cerr)) return *code;
    const std::vector<std::string> command(argv, argv + argc);
    return train_or_evaluate(options, stage, make_engine, command, total_timer);
  } catch (const NotImplemented& e) {
    // Only the message: it names the task, the file and the lesson page.
    return fail(e.what(), kExitNotImplemented);
  } catch (const UsageError& e) {
    return fail(std::string("error: ") + e.what(), kExitUsage);
  } catch (const DataError& e) {
    return fail(std::string("error: ") + e.what(), kExitError);
  } catch (const ModelFileError& e) {
    return fail(std::string("error: ") + e.what(), kExitError);
  } catch (const std::bad_alloc&) {
    return fail("error: out of memory (try a smaller --batch or --limit)", kExitError);
  } catch (const std::exception& e) {
    return fail(std::string("error: ") + e.what(), kExitError);
  } catch (...) {
    return fail("error: an unknown exception stopped the trainer", kExitError);
  }
}

}  // namespace course
