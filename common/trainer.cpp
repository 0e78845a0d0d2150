#include "common/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <iostream>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#define COURSE_HAVE_SIGACTION 1
#endif

#include "common/checkpoint.hpp"
#include "common/data.hpp"
#include "common/data_transform.hpp"
#include "common/metrics.hpp"
#include "common/model_file.hpp"
#include "common/not_implemented.hpp"
#include "common/progress.hpp"
#include "common/timer.hpp"

namespace course {

namespace {

using nlohmann::json;

// A mistake on the command line found after parsing (a spec that does not
// fit the data, a model the stage cannot run): exit code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// printf into a std::string: the tables and lines below are all fixed-width
// numbers, which printf formats shortest.
std::string fmt(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string s(n > 0 ? static_cast<std::size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(&s[0], s.size() + 1, format, args);
  va_end(args);
  return s;
}

double fraction(long part, long whole) { return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0; }

double percent(long part, long whole) { return 100.0 * fraction(part, whole); }

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

// ---- stopping: Ctrl-C, SIGTERM and a diverged loss ---------------------------

// The signal that asked the run to stop (0: none). A handler may do little
// more than set a flag of this type; the training loop reads it after every step.
volatile std::sig_atomic_t g_stop_signal = 0;

void record_stop_signal(int signal) {
  g_stop_signal = signal;
#ifdef COURSE_HAVE_SIGACTION
  // write() is one of the few calls a signal handler may make.
  static const char kNote[] = "\nstopping after this step to save a checkpoint (press Ctrl-C again to quit at once)\n";
  if (write(STDERR_FILENO, kNote, sizeof kNote - 1) < 0) {
  }
#endif
}

// While it lives, SIGINT (Ctrl-C) and SIGTERM only set g_stop_signal, once:
// the handler resets itself, so a second Ctrl-C ends the program at once when
// a step takes too long. A signal the shell told this process to ignore stays
// ignored. The destructor puts the previous handlers back.
class StopSignals {
 public:
  StopSignals() {
    g_stop_signal = 0;
#ifdef COURSE_HAVE_SIGACTION
    for (int i = 0; i < 2; ++i) {
      struct sigaction action {};
      action.sa_handler = record_stop_signal;
      sigemptyset(&action.sa_mask);
      action.sa_flags = SA_RESETHAND;
      installed_[i] = sigaction(kSignals[i], nullptr, &previous_[i]) == 0 && previous_[i].sa_handler != SIG_IGN &&
                      sigaction(kSignals[i], &action, nullptr) == 0;
    }
#else
    for (int i = 0; i < 2; ++i) {
      previous_[i] = std::signal(kSignals[i], record_stop_signal);
      installed_[i] = previous_[i] != SIG_ERR;
    }
#endif
  }
  ~StopSignals() {
    for (int i = 0; i < 2; ++i) {
      if (!installed_[i]) continue;
#ifdef COURSE_HAVE_SIGACTION
      sigaction(kSignals[i], &previous_[i], nullptr);
#else
      std::signal(kSignals[i], previous_[i]);
#endif
    }
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  /// The signal received since construction, or 0.
  static int received() { return g_stop_signal; }

 private:
  static constexpr int kSignals[2] = {SIGINT, SIGTERM};
  bool installed_[2] = {false, false};
#ifdef COURSE_HAVE_SIGACTION
  struct sigaction previous_[2];
#else
  void (*previous_[2])(int) = {nullptr, nullptr};
#endif
};

// Thrown from the batch callback to end an epoch after the current step. Not
// a std::exception, so that an engine's own error handling lets it pass.
struct StopEpoch {
  bool diverged;       // else a stop signal
  int step;            // the last step trained, counted from 1 in its epoch
  long examples_done;  // examples of the epoch trained, that step included
  double loss_sum;     // the engine's running loss sum at that step
};

// Where a run starts: `epoch` whole epochs done, then `step` batches
// (`examples_done` examples) of the next one.
struct ResumePoint {
  int epoch = 0;
  int step = 0;
  long examples_done = 0;
};

// "loss is NaN at epoch 3, step 17 of 938: ..." (step 0: not known). `stopped_after`
// > 0: an engine that checks its loss late (course::NonFiniteLoss) stopped after that step.
std::string divergence_message(double loss, int epoch, int step, int steps, double lr, int stopped_after = 0) {
  std::string where = "at epoch " + std::to_string(epoch);
  if (step > 0)
    where += ", step " + std::to_string(step) + " of " + std::to_string(steps);
  else
    where += " (this stage reports its loss once per epoch, so the first bad step is not known)";
  std::string message = std::string("loss is ") + (std::isinf(loss) ? "Inf" : "NaN") + " " + where +
                        ": the run diverged; try a smaller --lr, e.g. " + fmt("%g", lr / 10) + " (now " +
                        fmt("%g", lr) + ")";
  if (stopped_after > 0)
    message += "\n(this stage keeps its loss on the device and reads it back a few steps late: the run stopped"
               " after step " +
               std::to_string(stopped_after) + ")";
  return message;
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

// A word of a command line as a shell reads it back.
std::string shell_quoted(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                              "_-+=./:,@%") == std::string::npos)
    return word;
  std::string q = "'";
  for (char ch : word) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

// The command that continues a stopped run: the same words without --load and
// --resume (which --resume replaces), then --resume FILE.
std::string resume_command(const std::vector<std::string>& command, const std::string& checkpoint) {
  std::string line;
  for (std::size_t i = 0; i < command.size(); ++i) {
    const std::string& w = command[i];
    if (i > 0 && (w == "--load" || w == "--resume")) {
      ++i;  // and its value
      continue;
    }
    if (i > 0 && (w.rfind("--load=", 0) == 0 || w.rfind("--resume=", 0) == 0)) continue;
    line += (line.empty() ? "" : " ") + shell_quoted(w);
  }
  return line + " --resume " + shell_quoted(checkpoint);
}

// The per-layer table of --profile: milliseconds per batch, forward and backward.
json print_profile(const std::vector<LayerTime>& times, long batches, int batch) {
  json j = {{"batches", batches}, {"batch", batch}, {"layers", json::array()}};
  if (times.empty()) {
    std::cout << "\nprofile: this stage's engine reports no per-layer times\n";
    return j;
  }
  const double per = batches > 0 ? 1.0 / static_cast<double>(batches) : 0.0;
  double total_fwd = 0, total_bwd = 0;
  std::size_t width = std::string("total").size();
  for (const auto& t : times) {
    total_fwd += t.forward_ms * per;
    total_bwd += t.backward_ms * per;
    width = std::max(width, t.layer.size());
  }
  const double total = total_fwd + total_bwd;
  const int w = static_cast<int>(width);
  std::cout << "\nprofile: ms per batch of " << batch << ", last epoch (" << batches << " batches)\n"
            << fmt("%-*s  %10s  %11s  %10s  %6s\n", w, "layer", "forward ms", "backward ms", "total ms", "share");
  for (const auto& t : times) {
    const double f = t.forward_ms * per, b = t.backward_ms * per;
    const double share = total > 0 ? 100.0 * (f + b) / total : 0.0;
    std::cout << fmt("%-*s  %10.3f  %11.3f  %10.3f  %5.1f%%\n", w, t.layer.c_str(), f, b, f + b, share);
    j["layers"].push_back({{"layer", t.layer},
                           {"forward_ms_per_batch", f},
                           {"backward_ms_per_batch", b},
                           {"calls", t.calls},
                           {"share", share / 100.0}});
  }
  std::cout << fmt("%-*s  %10.3f  %11.3f  %10.3f  %5.1f%%\n", w, "total", total_fwd, total_bwd, total,
                   total > 0 ? 100.0 : 0.0);
  j["total_forward_ms_per_batch"] = total_fwd;
  j["total_backward_ms_per_batch"] = total_bwd;
  return j;
}

// Evaluates the test set and builds the report, checking what the engine returned.
struct Evaluation {
  EpochStats stats;
  std::vector<int> predictions;
  double seconds = 0;
};

Evaluation evaluate_test(Engine& engine, const Dataset& test) {
  Evaluation ev;
  Timer timer;
  ev.stats = engine.evaluate(test, &ev.predictions);
  ev.seconds = timer.seconds();
  if (ev.predictions.size() != test.labels.size())
    throw std::runtime_error("the engine returned " + std::to_string(ev.predictions.size()) + " predictions for " +
                             std::to_string(test.labels.size()) + " test examples");
  return ev;
}

void print_final_report(const ClassificationReport& report, const Dataset& test) {
  std::cout << "\n"
            << fmt("final test accuracy %.2f%% (%ld of %ld)\n", 100.0 * report.accuracy, report.correct, report.total)
            << "\n"
            << format_per_class(report, test.class_names) << "\n"
            << "confusion matrix (rows: true class, columns: predicted class)\n"
            << format_confusion(report, test.class_names);
}

// The engine's own facts (Engine::stage_results()), when it has any.
void add_stage_results(json& results, const Engine& engine) {
  json facts = engine.stage_results();
  if (!facts.is_null()) results["stage_results"] = std::move(facts);
}

void write_json(const TrainerOptions& o, const json& results) {
  if (o.json.empty()) return;
  write_file_atomically(o.json, results.dump(2) + "\n");
  if (o.verbose) std::cout << "wrote " << o.json << "\n";
}

// The run after parsing. Errors leave as exceptions; run_trainer() turns them into exit codes.
int train_or_evaluate(const TrainerOptions& given, const StageInfo& stage, const EngineFactory& make_engine,
                      const std::vector<std::string>& command, const Timer& total_timer) {
  TrainerOptions o = given;  // less the files to write, on a process that writes none (Engine::writes_files())
  json results;
  results["stage"] = {{"id", stage.id}, {"title", stage.title}};
  results["options"] = to_json(o);

  // ---- data
  DataOptions data_options;
  data_options.dataset = o.dataset;
  data_options.data_dir = o.data_dir;
  data_options.limit = o.limit;
  data_options.seed = o.seed;
  data_options.channels = o.channels;
  data_options.val_fraction = o.val_fraction;
  // A named model defined on its own input (m0 .. m4) gets it, unless the command line names one.
  const std::optional<Shape3> model_input = implied_model_input(o);
  if (model_input) {
    data_options.resize = ImageSize{model_input->h, model_input->w};
    data_options.channels = model_input->c;
    data_options.transform_why = " for " + o.model + "'s input " + model_input->str() +
                                 " (--resize and --channels choose another)";
  }
  DataSplit data;
  try {
    if (!o.resize.empty()) data_options.resize = parse_image_size(o.resize);
    data = load_data(data_options);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string(e.what()) + (model_input ? " (--model " + o.model + " is defined on " +
                                                                model_input->str() + ", which this run turns the data into)"
                                                          : std::string()));
  }
  const Dataset& train = data.train;
  const Dataset& test = data.test;
  const Dataset& val = data.val;  // empty without --val-fraction
  const bool validating = val.size() > 0;
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
  results["data"] = {{"dataset", train.name},
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

  // ---- architecture
  Arch arch;
  long parameters = 0;
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
  const std::string spec = arch.spec();
  results["arch"] = {{"model", model_label(o)}, {"spec", spec}, {"parameters", parameters}};

  // ---- engine
  EngineConfig config;
  config.arch = arch;
  config.input = train.shape;
  config.classes = train.classes;
  config.batch = o.batch;
  config.lr = o.lr;
  config.momentum = o.momentum;
  config.seed = o.seed;
  config.loss = o.loss;
  config.threads = resolve_threads(o, stage);
  config.profile = o.profile;
  config.verbose = o.verbose;
  // A resumed run's checkpoint is read before its engine is built: the engine
  // takes the choices the run made (Engine::engine_state()) instead of making
  // them again, where making them again could choose otherwise (stage 06 times
  // its conv algorithms). The rest of the checkpoint is checked further down.
  std::optional<Checkpoint> resumed;
  if (!o.resume.empty()) {
    resumed = load_checkpoint(o.resume);
    config.engine_state = resumed->engine_state;
  }
  std::unique_ptr<Engine> engine;
  try {
    engine = make_engine(config);
  } catch (const std::invalid_argument& e) {
    throw UsageError("stage " + stage.id + " cannot run " + spec + ": " + e.what());
  }
  if (!engine) throw std::runtime_error("stage " + stage.id + " built no engine");
  const bool writes_files = engine->writes_files();
  if (!writes_files) {
    o.save.clear();
    o.json.clear();
    o.checkpoint_every = 0;
  }
  const std::string device = engine->device();
  results["device"] = device;
  results["threads"] = config.threads;

  // ---- a saved model
  if (!o.load.empty()) {
    ModelFile model = load_model(o.load);
    check_model_matches(model, spec, train.shape, train.classes, o.load);
    check_tensors_match(model.tensors, engine->get_parameters(), o.load, stage, "parameters");
    engine->set_parameters(model.tensors);
    std::cout << "loaded " << o.load << " (saved by stage " << (model.stage.empty() ? "?" : model.stage) << ")\n";
    results["loaded_from"] = o.load;
  }

  const std::string header = stage.id + " | " + device + " | " + model_label(o) + " " + spec + " (" +
                             std::to_string(parameters) + " parameters) | " + train.name + " " +
                             std::to_string(train.size()) + " train, " +
                             (validating ? std::to_string(val.size()) + " val, " : std::string()) +
                             std::to_string(test.size()) + " test, " +
                             train.shape.str() + " | " +
                             fmt("batch %d  lr %g %s  momentum %g  seed %llu", o.batch, o.lr, o.lr_schedule.c_str(),
                                 o.momentum, static_cast<unsigned long long>(o.seed));

  // ---- evaluate only
  if (o.evaluate) {
    std::cout << header << "\n";
    const Evaluation ev = evaluate_test(*engine, test);
    const ClassificationReport report = classification_report(test.labels, ev.predictions, test.classes);
    if (o.verbose) std::cout << fmt("evaluation took %.2f s\n", ev.seconds);
    results["test_loss"] = ev.stats.seen > 0 ? ev.stats.loss_sum / static_cast<double>(ev.stats.seen) : 0.0;
    if (o.loss == "mse" && engine->reports_mae() && ev.stats.seen > 0) {  // the MAE beside the MSE
      results["test_mae"] = ev.stats.abs_error_sum / static_cast<double>(ev.stats.seen);
      std::cout << fmt("test loss %.4f  test MAE %.4f\n", results["test_loss"].get<double>(),
                       results["test_mae"].get<double>());
    }
    print_final_report(report, test);
    add_stage_results(results, *engine);
    results["status"] = "evaluated";
    results["eval_seconds"] = ev.seconds;
    results["final"] = to_json(report, test.class_names);
    results["total_seconds"] = total_timer.seconds();
    std::cout.flush();
    write_json(o, results);
    return kExitOk;
  }

  // ---- checkpoints: where they go, and a run to continue (--resume)
  const std::string checkpoint_path = !o.checkpoint.empty() ? o.checkpoint
                                      : !o.resume.empty()   ? o.resume
                                                            : stage.id + ".ckpt";
  const std::uint64_t labels_hash = labels_fingerprint(train);
  if (o.checkpoint_every > 0) optimizer_state_or_usage_error(*engine, stage, "--checkpoint-every");
  const std::string nondeterminism = engine->nondeterminism();
  if (!nondeterminism.empty() && (o.checkpoint_every > 0 || !o.resume.empty()))
    std::cerr << "note: " << nondeterminism << ", so a resumed run matches an uninterrupted one only to rounding,"
              << " not bit for bit\n";
  results["epochs"] = json::array();
  ResumePoint start;  // where training starts: epoch 0, step 0 unless resumed
  if (resumed) {
    const Checkpoint& c = *resumed;
    check_model_matches(c.model, spec, train.shape, train.classes, o.resume);
    check_tensors_match(c.model.tensors, engine->get_parameters(), o.resume, stage, "parameters");
    check_tensors_match(c.optimizer, optimizer_state_or_usage_error(*engine, stage, "--resume"), o.resume, stage,
                        "optimizer tensors");
    if (c.dataset != o.dataset || c.train_examples != train.size() || c.labels_hash != labels_hash)
      throw UsageError("checkpoint '" + o.resume + "' continues a run on " + std::to_string(c.train_examples) +
                       " training examples of " + c.dataset + ", but this run has " + std::to_string(train.size()) +
                       " of " + o.dataset +
                       (c.train_examples == train.size() && c.dataset == o.dataset ? " with other labels" : "") +
                       ": resume with the --dataset, --data-dir, --limit and --val-fraction of that run");
    warn_if_differs("--seed", o.seed != c.seed, std::to_string(o.seed), std::to_string(c.seed));
    warn_if_differs("--batch", o.batch != c.batch, std::to_string(o.batch), std::to_string(c.batch));
    warn_if_differs("--lr", o.lr != c.lr, fmt("%g", o.lr), fmt("%g", c.lr));
    warn_if_differs("--lr-schedule", o.lr_schedule != c.lr_schedule, o.lr_schedule, c.lr_schedule);
    // A constant rate does not depend on --epochs; a schedule over the run does.
    warn_if_differs("--epochs", o.lr_schedule != "constant" && o.epochs != c.epochs, std::to_string(o.epochs),
                    std::to_string(c.epochs) + " (the " + o.lr_schedule + " schedule spans --epochs)");
    warn_if_differs("--momentum", o.momentum != c.momentum, fmt("%g", o.momentum), fmt("%g", c.momentum));
    warn_if_differs("--loss", o.loss != c.loss, o.loss, c.loss);
    engine->set_parameters(c.model.tensors);
    engine->set_optimizer_state(c.optimizer);
    start = {c.epoch, c.step, c.examples_done};
    results["epochs"] = json::parse(c.history);
    results["resumed_from"] = {{"file", o.resume}, {"epoch", c.epoch + 1}, {"step", c.step}};
    if (c.examples_done > 0)
      std::cout << "resumed " << o.resume << ": epoch " << c.epoch + 1 << ", after step " << c.step << " ("
                << c.examples_done << " of " << train.size() << " examples of that epoch done)\n";
    else
      std::cout << "resumed " << o.resume << " after epoch " << c.epoch << "\n";
  }
  // Everything that goes into a checkpoint after `epochs_done` whole epochs
  // and `done` examples (`step` batches) of the next one.
  auto make_checkpoint = [&](int epochs_done, int step, long done) {
    Checkpoint c;
    c.model.arch = spec;
    c.model.input = train.shape;
    c.model.classes = train.classes;
    c.model.stage = stage.id;
    c.model.tensors = engine->get_parameters();
    c.optimizer = engine->get_optimizer_state();
    c.engine_state = engine->engine_state();
    c.epoch = epochs_done;
    c.step = step;
    c.examples_done = done;
    c.seed = o.seed;
    c.batch = o.batch;
    c.lr = o.lr;
    c.lr_schedule = o.lr_schedule;
    c.epochs = o.epochs;
    c.momentum = o.momentum;
    c.loss = o.loss;
    c.dataset = o.dataset;
    c.train_examples = train.size();
    c.labels_hash = labels_hash;
    c.history = results["epochs"].dump();
    return c;
  };
  // Saves a checkpoint for a stop (Ctrl-C or SIGTERM) and says how to go on.
  auto stop_for_signal = [&](int epochs_done, int step, long done, const std::string& where) -> int {
    if (!writes_files) return kExitInterrupted;  // the process that writes saves the checkpoint and says so
    const char* what = StopSignals::received() == SIGTERM ? "SIGTERM" : "Ctrl-C";
    std::cout.flush();
    results["status"] = "interrupted";
    results["stopped_at"] = {{"epoch", epochs_done + 1}, {"step", step}};
    bool saved = false;
    try {
      save_checkpoint(checkpoint_path, make_checkpoint(epochs_done, step, done));
      saved = true;
    } catch (const CheckpointNotSupported& e) {
      std::cerr << "stopped by " << what << " " << where << "; nothing was saved: " << e.what() << "\n";
    } catch (const CheckpointError& e) {
      std::cerr << "stopped by " << what << " " << where << "; the checkpoint could not be saved: " << e.what()
                << "\n";
      results["status"] = "interrupted, checkpoint failed";
      results["total_seconds"] = total_timer.seconds();
      write_json(o, results);
      return kExitError;
    }
    if (saved) {
      results["checkpoint"] = checkpoint_path;
      std::cerr << "stopped by " << what << " " << where << "; saved the checkpoint " << checkpoint_path << "\n"
                << "continue with: " << resume_command(command, checkpoint_path) << "\n";
    }
    results["total_seconds"] = total_timer.seconds();
    write_json(o, results);
    return kExitInterrupted;
  };

  // ---- train
  std::cout << header << "\n";
  if (o.verbose)
    std::cout << "loss " << o.loss << ", " << o.epochs << " epochs, threads " << config.threads
              << (o.profile ? ", profiling every layer" : "")
              << (o.checkpoint_every > 0 ? ", a checkpoint every " + std::to_string(o.checkpoint_every) +
                                               " epochs to " + checkpoint_path
                                         : std::string())
              << "\n";
  std::cout.flush();
  const int epoch_width = static_cast<int>(std::to_string(o.epochs).size());
  const int steps_per_epoch = (train.size() + o.batch - 1) / o.batch;
  const bool batch_loss = engine->reports_batch_loss();
  // With --loss mse, the mean absolute error of the outputs beside the loss (EpochStats::abs_error_sum).
  const bool mae = o.loss == "mse" && engine->reports_mae();
  if (o.loss == "mse" && !engine->reports_mae())
    std::cout << "note: stage " << stage.id << " does not compute the mean absolute error: no MAE below\n";
  auto mean_abs = [](const EpochStats& s) {
    return s.seen > 0 ? s.abs_error_sum / static_cast<double>(s.seen) : 0.0;
  };
  std::vector<LayerTime> last_times;
  long last_batches = 0;
  Evaluation ev;
  bool trained = false;
  {
    const StopSignals stop_signals;  // Ctrl-C stops after the current step while it lives
    for (int epoch = start.epoch + 1; epoch <= o.epochs; ++epoch) {
      // A resumed run may start inside an epoch: its engine then trains the
      // examples that epoch had left, in the order it would have seen them.
      const bool partial = epoch == start.epoch + 1 && start.examples_done > 0;
      const long offset = partial ? start.examples_done : 0;
      Dataset rest;
      if (partial) rest = remaining_examples(train, o.seed, epoch - 1, offset);
      const Dataset& part = partial ? rest : train;
      if (o.profile) engine->reset_layer_times();
      EpochStats stats;
      double train_seconds = 0;
      int step = partial ? start.step : 0;
      try {
        ProgressBar bar(fmt("epoch %*d/%d", epoch_width, epoch, o.epochs), train.size(), o.progress);
        Timer timer;
        engine->set_learning_rate(scheduled_learning_rate(o.lr, o.lr_schedule, epoch - 1, o.epochs));
        stats = engine->train_epoch(part, epoch - 1, [&](long done, double loss_sum) {
          ++step;
          const long total_done = offset + done;
          const bool show_loss = std::isfinite(loss_sum) && done > 0;
          bar.update(total_done, show_loss ? fmt("loss %.4f", loss_sum / static_cast<double>(done)) : std::string());
          if (batch_loss && !std::isfinite(loss_sum)) throw StopEpoch{true, step, total_done, loss_sum};
          // After the last step the epoch is complete: it ends as usual and the
          // stop is taken at the epoch boundary below.
          if (engine->stop_requested(StopSignals::received() != 0, false) && total_done < train.size())
            throw StopEpoch{false, step, total_done, loss_sum};
        });
        train_seconds = timer.seconds();
        bar.finish();
      } catch (const NonFiniteLoss& bad) {
        // An engine that checks its loss late (the GPU engines) counts steps in
        // the Dataset it was given: after a resume inside this epoch, the
        // examples left after step start.step, so the epoch's step is start.step more.
        const int first_step = (partial ? start.step : 0);
        std::cout.flush();
        std::cerr << divergence_message(bad.loss_sum(), epoch, first_step + bad.step(), steps_per_epoch, o.lr,
                                        first_step + bad.steps_queued())
                  << "\n";
        results["epochs"].push_back({{"epoch", epoch},
                                     {"loss", nullptr},
                                     {"step", first_step + bad.step()},
                                     {"stopped_after_step", first_step + bad.steps_queued()}});
        results["status"] = "diverged";
        results["total_seconds"] = total_timer.seconds();
        write_json(o, results);
        return kExitDiverged;
      } catch (const StopEpoch& stop) {
        if (!stop.diverged)
          return stop_for_signal(epoch - 1, stop.step, stop.examples_done,
                                 "after step " + std::to_string(stop.step) + " of " + std::to_string(steps_per_epoch) +
                                     " in epoch " + std::to_string(epoch));
        std::cout.flush();
        std::cerr << divergence_message(stop.loss_sum, epoch, stop.step, steps_per_epoch, o.lr) << "\n";
        results["epochs"].push_back({{"epoch", epoch}, {"loss", nullptr}, {"step", stop.step}});
        results["status"] = "diverged";
        results["total_seconds"] = total_timer.seconds();
        write_json(o, results);
        return kExitDiverged;
      }
      if (o.profile) {
        last_times = engine->layer_times();
        last_batches = (stats.seen + o.batch - 1) / o.batch;
      }
      const double loss = stats.seen > 0 ? stats.loss_sum / static_cast<double>(stats.seen) : std::nan("");
      const double images_per_s = train_seconds > 0 ? static_cast<double>(stats.seen) / train_seconds : 0.0;
      if (!std::isfinite(loss)) {
        // An engine that reports its loss per batch stopped above at the
        // first bad step; here the step is not known.
        std::cout.flush();
        std::cerr << divergence_message(loss, epoch, 0, steps_per_epoch, o.lr) << "\n";
        results["epochs"].push_back({{"epoch", epoch}, {"loss", nullptr}, {"seconds", train_seconds}});
        results["status"] = "diverged";
        results["total_seconds"] = total_timer.seconds();
        write_json(o, results);
        return kExitDiverged;
      }

      // The validation set first, then the test set, both with the engine's evaluate().
      Evaluation val_ev;
      if (validating) val_ev = evaluate_test(*engine, val);
      ev = evaluate_test(*engine, test);
      trained = true;
      const double train_acc = percent(stats.correct, stats.seen);
      const double test_acc = percent(ev.stats.correct, ev.stats.seen);
      const double val_loss =
          val_ev.stats.seen > 0 ? val_ev.stats.loss_sum / static_cast<double>(val_ev.stats.seen) : 0.0;
      const std::string val_part =
          validating ? fmt("  val loss %.4f%s  val %.2f%%", val_loss,
                           mae ? fmt("  val MAE %.4f", mean_abs(val_ev.stats)).c_str() : "",
                           percent(val_ev.stats.correct, val_ev.stats.seen))
                     : std::string();
      const std::string train_mae = mae ? fmt("  MAE %.4f", mean_abs(stats)) : std::string();
      const std::string test_mae = mae ? fmt("  test MAE %.4f", mean_abs(ev.stats)) : std::string();
      std::string line = fmt("epoch %*d/%d  loss %.4f%s  train %.2f%%%s%s  test %.2f%%  %.2f s  %.0f img/s",
                             epoch_width, epoch, o.epochs, loss, train_mae.c_str(), train_acc, val_part.c_str(),
                             test_mae.c_str(), test_acc, train_seconds, images_per_s);
      if (partial)
        line += fmt("  (resumed after step %d: loss and train accuracy of its last %ld examples)", start.step,
                    stats.seen);
      if (o.verbose)
        line += validating ? fmt("  (test eval %.2f s, val eval %.2f s)", ev.seconds, val_ev.seconds)
                           : fmt("  (test eval %.2f s)", ev.seconds);
      std::cout << line << std::endl;  // flushed, so a redirected log shows progress as it happens
      json entry = {{"epoch", epoch},
                    {"loss", loss},
                    {"train_accuracy", fraction(stats.correct, stats.seen)},
                    {"test_accuracy", fraction(ev.stats.correct, ev.stats.seen)},
                    {"test_loss", ev.stats.seen > 0 ? ev.stats.loss_sum / static_cast<double>(ev.stats.seen) : 0.0},
                    {"seconds", train_seconds},
                    {"images_per_second", images_per_s},
                    {"eval_seconds", ev.seconds}};
      if (validating) {
        entry["val_accuracy"] = fraction(val_ev.stats.correct, val_ev.stats.seen);
        entry["val_loss"] = val_loss;
        entry["val_eval_seconds"] = val_ev.seconds;
      }
      if (mae) {
        entry["train_mae"] = mean_abs(stats);
        entry["test_mae"] = mean_abs(ev.stats);
        if (validating) entry["val_mae"] = mean_abs(val_ev.stats);
      }
      if (partial) {
        entry["resumed_after_step"] = start.step;
        entry["examples"] = stats.seen;
      }
      results["epochs"].push_back(entry);

      const bool periodic = o.checkpoint_every > 0 && epoch % o.checkpoint_every == 0;
      if (periodic) {
        // A checkpoint that cannot be written (a full disk) must not end the
        // run it protects: the previous one is still whole, so warn and go on.
        try {
          save_checkpoint(checkpoint_path, make_checkpoint(epoch, 0, 0));
          if (o.verbose) std::cout << "saved the checkpoint " << checkpoint_path << " after epoch " << epoch << "\n";
        } catch (const CheckpointError& e) {
          std::cerr << "warning: " << e.what() << "; training goes on\n";
        }
      }
      if (engine->stop_requested(StopSignals::received() != 0, true) && epoch < o.epochs)
        return stop_for_signal(epoch, 0, 0, "after epoch " + std::to_string(epoch));
    }
  }
  if (o.epochs == 0) {
    const std::string weights = !o.resume.empty() ? "the weights of the checkpoint " + o.resume
                                : !o.load.empty()  ? "the weights loaded from " + o.load
                                                   : "the initial weights of seed " + std::to_string(o.seed);
    std::cout << "--epochs 0: nothing trained; the figures below are those of " << weights << "\n";
    ev = evaluate_test(*engine, test);
  } else if (!trained) {
    std::cout << "the run has done " << start.epoch << " epochs"
              << (start.step > 0 ? " and " + std::to_string(start.step) + " steps of the next" : std::string())
              << " of the --epochs " << o.epochs << " asked for: nothing left to train (raise --epochs to go on)\n";
    ev = evaluate_test(*engine, test);
  }

  // ---- the end: report, profile, model file, JSON
  const ClassificationReport report = classification_report(test.labels, ev.predictions, test.classes);
  print_final_report(report, test);
  results["final"] = to_json(report, test.class_names);
  if (o.profile) results["profile"] = print_profile(last_times, last_batches, o.batch);

  if (!o.save.empty()) {
    ModelFile model;
    model.arch = spec;
    model.input = train.shape;
    model.classes = train.classes;
    model.stage = stage.id;
    model.tensors = engine->get_parameters();
    save_model(o.save, model);
    std::cout << "\nsaved the model to " << o.save << "\n";
    results["saved_to"] = o.save;
  }
  const double total = total_timer.seconds();
  std::cout << fmt("\ntotal time %.2f s\n", total);
  std::cout.flush();
  add_stage_results(results, *engine);
  results["status"] = "ok";
  results["total_seconds"] = total;
  write_json(o, results);
  return kExitOk;
}

}  // namespace

namespace {

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
