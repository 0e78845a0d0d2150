// What a run of course::run_trainer prints and writes (common/train/trainer_steps.hpp):
// its numbers, the evaluation of a data set, the final report, the --profile
// table, the --save model file and the --json file.
#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/model/model_file.hpp"
#include "common/train/trainer.hpp"
#include "common/train/trainer_steps.hpp"

namespace course::trainer_steps {

namespace {

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

}  // namespace

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

// Evaluates the test set and builds the report, checking what the engine returned.
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


int report_and_save(Run& run) {
  const TrainerOptions& o = run.o;
  const Dataset& test = run.test();
  json& results = run.results;
  const ClassificationReport report = classification_report(test.labels, run.final_eval.predictions, test.classes);
  print_final_report(report, test);
  results["final"] = to_json(report, test.class_names);
  if (o.profile) results["profile"] = print_profile(run.last_times, run.last_batches, o.batch);

  if (!o.save.empty()) {
    ModelFile model;
    model.arch = run.spec;
    model.input = run.train().shape;
    model.classes = run.train().classes;
    model.stage = run.stage.id;
    model.tensors = run.engine->get_parameters();
    save_model(o.save, model);
    std::cout << "\nsaved the model to " << o.save << "\n";
    results["saved_to"] = o.save;
  }
  const double total = run.total_timer.seconds();
  std::cout << fmt("\ntotal time %.2f s\n", total);
  std::cout.flush();
  add_stage_results(results, *run.engine);
  results["status"] = "ok";
  results["total_seconds"] = total;
  write_json(o, results);
  return kExitOk;
}

}  // namespace course::trainer_steps
