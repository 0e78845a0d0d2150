#include "common/trainer.hpp"

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <iostream>
#include <memory>
#include <new>
#include <stdexcept>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/data.hpp"
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
                         const std::string& path, const StageInfo& stage) {
  if (saved.size() != expected.size())
    throw ModelFileError("model file '" + path + "' holds " + std::to_string(saved.size()) + " tensors, but stage " +
                         stage.id + " has " + std::to_string(expected.size()) + " parameters for this model");
  for (std::size_t i = 0; i < saved.size(); ++i) {
    const auto& s = saved[i];
    const auto& e = expected[i];
    if (s.name != e.name || s.tensor.shape != e.tensor.shape)
      throw ModelFileError("model file '" + path + "' holds tensor " + std::to_string(i + 1) + " '" + s.name +
                           "' of shape " + s.tensor.shape_str() + ", but stage " + stage.id + " expects '" + e.name +
                           "' of shape " + e.tensor.shape_str());
  }
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

void write_json(const TrainerOptions& o, const json& results) {
  if (o.json.empty()) return;
  write_file_atomically(o.json, results.dump(2) + "\n");
  if (o.verbose) std::cout << "wrote " << o.json << "\n";
}

// The run after parsing. Errors leave as exceptions; run_trainer() turns them into exit codes.
int train_or_evaluate(const TrainerOptions& o, const StageInfo& stage, const EngineFactory& make_engine,
                      const Timer& total_timer) {
  json results;
  results["stage"] = {{"id", stage.id}, {"title", stage.title}};
  results["options"] = to_json(o);

  // ---- data
  DataOptions data_options;
  data_options.dataset = o.dataset;
  data_options.data_dir = o.data_dir;
  data_options.limit = o.limit;
  data_options.seed = o.seed;
  DataSplit data;
  try {
    data = load_data(data_options);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  const Dataset& train = data.train;
  const Dataset& test = data.test;
  std::cout << "data: " << data.note << "\n";
  if (data.synthetic_fallback)
    std::cerr << "warning: no " << o.dataset << " files were found, so this run uses the built-in synthetic set;"
              << " its accuracy says nothing about " << o.dataset << " (see --data-dir)\n";
  if (o.verbose)
    std::cout << "data: train " << train.size() << " examples from " << train.source << "\n"
              << "data: test  " << test.size() << " examples from " << test.source << "\n"
              << "data: examples of " << train.shape.str() << ", " << train.classes << " classes\n";
  if (train.size() == 0) throw DataError("the training set of " + o.dataset + " is empty");
  results["data"] = {{"dataset", train.name},
                     {"note", data.note},
                     {"synthetic_fallback", data.synthetic_fallback},
                     {"train_examples", train.size()},
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
  std::unique_ptr<Engine> engine;
  try {
    engine = make_engine(config);
  } catch (const std::invalid_argument& e) {
    throw UsageError("stage " + stage.id + " cannot run " + spec + ": " + e.what());
  }
  if (!engine) throw std::runtime_error("stage " + stage.id + " built no engine");
  const std::string device = engine->device();
  results["device"] = device;
  results["threads"] = config.threads;

  // ---- a saved model
  if (!o.load.empty()) {
    ModelFile model = load_model(o.load);
    check_model_matches(model, spec, train.shape, train.classes, o.load);
    check_tensors_match(model.tensors, engine->get_parameters(), o.load, stage);
    engine->set_parameters(model.tensors);
    std::cout << "loaded " << o.load << " (saved by stage " << (model.stage.empty() ? "?" : model.stage) << ")\n";
    results["loaded_from"] = o.load;
  }

  const std::string header = stage.id + " | " + device + " | " + model_label(o) + " " + spec + " (" +
                             std::to_string(parameters) + " parameters) | " + train.name + " " +
                             std::to_string(train.size()) + " train, " + std::to_string(test.size()) + " test, " +
                             train.shape.str() + " | " +
                             fmt("batch %d  lr %g  momentum %g  seed %llu", o.batch, o.lr, o.momentum,
                                 static_cast<unsigned long long>(o.seed));

  // ---- evaluate only
  if (o.evaluate) {
    std::cout << header << "\n";
    const Evaluation ev = evaluate_test(*engine, test);
    const ClassificationReport report = classification_report(test.labels, ev.predictions, test.classes);
    if (o.verbose) std::cout << fmt("evaluation took %.2f s\n", ev.seconds);
    print_final_report(report, test);
    results["status"] = "evaluated";
    results["test_loss"] = ev.stats.seen > 0 ? ev.stats.loss_sum / static_cast<double>(ev.stats.seen) : 0.0;
    results["eval_seconds"] = ev.seconds;
    results["final"] = to_json(report, test.class_names);
    results["total_seconds"] = total_timer.seconds();
    std::cout.flush();
    write_json(o, results);
    return kExitOk;
  }

  // ---- train
  std::cout << header << "\n";
  if (o.verbose)
    std::cout << "loss " << o.loss << ", " << o.epochs << " epochs, threads " << config.threads
              << (o.profile ? ", profiling every layer" : "") << "\n";
  std::cout.flush();
  results["epochs"] = json::array();
  const int epoch_width = static_cast<int>(std::to_string(o.epochs).size());
  std::vector<LayerTime> last_times;
  long last_batches = 0;
  Evaluation ev;
  for (int epoch = 1; epoch <= o.epochs; ++epoch) {
    if (o.profile) engine->reset_layer_times();
    EpochStats stats;
    double train_seconds = 0;
    {
      ProgressBar bar(fmt("epoch %*d/%d", epoch_width, epoch, o.epochs), train.size(), o.progress);
      Timer timer;
      stats = engine->train_epoch(train, epoch - 1, [&bar](long done, double loss_sum) {
        const bool show_loss = std::isfinite(loss_sum) && done > 0;
        bar.update(done, show_loss ? fmt("loss %.4f", loss_sum / static_cast<double>(done)) : std::string());
      });
      train_seconds = timer.seconds();
      bar.finish();
    }
    if (o.profile) {
      last_times = engine->layer_times();
      last_batches = (stats.seen + o.batch - 1) / o.batch;
    }
    const double loss = stats.seen > 0 ? stats.loss_sum / static_cast<double>(stats.seen) : std::nan("");
    const double images_per_s = train_seconds > 0 ? static_cast<double>(stats.seen) / train_seconds : 0.0;
    if (!std::isfinite(loss)) {
      std::cout.flush();
      std::cerr << "loss is " << (std::isinf(loss) ? "Inf" : "NaN") << " at epoch " << epoch
                << ": the run diverged; try a smaller --lr (now " << fmt("%g", o.lr) << ")\n";
      results["epochs"].push_back({{"epoch", epoch}, {"loss", nullptr}, {"seconds", train_seconds}});
      results["status"] = "diverged";
      results["total_seconds"] = total_timer.seconds();
      write_json(o, results);
      return kExitDiverged;
    }

    ev = evaluate_test(*engine, test);
    const double train_acc = percent(stats.correct, stats.seen);
    const double test_acc = percent(ev.stats.correct, ev.stats.seen);
    std::string line = fmt("epoch %*d/%d  loss %.4f  train %.2f%%  test %.2f%%  %.2f s  %.0f img/s", epoch_width,
                           epoch, o.epochs, loss, train_acc, test_acc, train_seconds, images_per_s);
    if (o.verbose) line += fmt("  (test eval %.2f s)", ev.seconds);
    std::cout << line << std::endl;  // flushed, so a redirected log shows progress as it happens
    results["epochs"].push_back({{"epoch", epoch},
                                 {"loss", loss},
                                 {"train_accuracy", fraction(stats.correct, stats.seen)},
                                 {"test_accuracy", fraction(ev.stats.correct, ev.stats.seen)},
                                 {"test_loss", ev.stats.seen > 0 ? ev.stats.loss_sum / static_cast<double>(ev.stats.seen) : 0.0},
                                 {"seconds", train_seconds},
                                 {"images_per_second", images_per_s},
                                 {"eval_seconds", ev.seconds}});
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
  results["status"] = "ok";
  results["total_seconds"] = total;
  write_json(o, results);
  return kExitOk;
}

}  // namespace

std::string resolve_arch_spec(const TrainerOptions& o, Shape3 input, int classes) {
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
    return train_or_evaluate(options, stage, make_engine, total_timer);
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
