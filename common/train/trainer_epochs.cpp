// The epochs of course::run_trainer's run (common/train/trainer_steps.hpp): each
// epoch trained, evaluated, reported and checkpointed; the stops (a NaN or Inf
// loss, Ctrl-C, SIGTERM) with their messages and checkpoints; and the report
// at the end. The setup before the first epoch is in trainer.cpp.
#include <algorithm>
#include <cmath>
#include <csignal>
#include <iostream>
#include <string>
#include <vector>

#include "common/train/checkpoint.hpp"
#include "common/model/model_file.hpp"
#include "common/train/progress.hpp"
#include "common/train/stop_signals.hpp"
#include "common/train/trainer.hpp"
#include "common/train/trainer_steps.hpp"

namespace course::trainer_steps {

namespace {

// ---- stopping: Ctrl-C, SIGTERM and a diverged loss ---------------------------

// Thrown from the batch callback to end an epoch after the current step. Not
// a std::exception, so that an engine's own error handling lets it pass.
struct StopEpoch {
  bool diverged;       // else a stop signal
  int step;            // the last step trained, counted from 1 in its epoch
  long examples_done;  // examples of the epoch trained, that step included
  double loss_sum;     // the engine's running loss sum at that step
};

// "loss is NaN at epoch 3, step 17 of 938: ..." (step 0: not known). `stopped_after`
// > 0: an engine that checks its loss late (course::NonFiniteLoss) stopped after that step.
std::string divergence_message(double loss, int epoch, int step, int steps, const TrainerOptions& o,
                               int stopped_after = 0) {
  const double lr = o.lr;
  std::string where = "at epoch " + std::to_string(epoch);
  if (step > 0)
    where += ", step " + std::to_string(step) + " of " + std::to_string(steps);
  else
    where += " (this stage reports its loss once per epoch, so the first bad step is not known)";
  // A tenth of the rate; but a tenth of an absurd rate (1e6) is absurd too: above 1 (no model of the
  // course trains with SGD at such a rate), the default rate instead, which trains them all.
  const std::string advice = lr / 10 <= 1 ? fmt("%g", lr / 10) : fmt("%g (the default)", TrainerOptions{}.lr);
  std::string message = std::string("loss is ") + (std::isinf(loss) ? "Inf" : "NaN") + " " + where +
                        ": the run diverged; try a smaller --lr, e.g. " + advice + " (now " + fmt("%g", lr) + ")";
  if (o.lr_scaling != "none")
    message += fmt(", or a longer --warmup-steps (now %d; --lr-scaling %s made the rate %g at batch %d)",
                   o.warmup_steps, o.lr_scaling.c_str(), scaled_learning_rate(o), o.batch);
  if (stopped_after > 0)
    message += "\n(this stage keeps its loss on the device and reads it back a few steps late: the run stopped"
               " after step " +
               std::to_string(stopped_after) + ")";
  return message;
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


// Everything that goes into a checkpoint after `epochs_done` whole epochs
// and `done` examples (`step` batches) of the next one.
Checkpoint make_checkpoint(Run& run, int epochs_done, int step, long done) {
  const TrainerOptions& o = run.o;
  const Dataset& train = run.train();
  return Checkpoint{
      .model = {.arch = run.spec, .input = train.shape, .classes = train.classes, .stage = run.stage.id,
                .tensors = run.engine->get_parameters()},
      .optimizer = run.engine->get_optimizer_state(),
      .engine_state = run.engine->engine_state(),
      .epoch = epochs_done, .step = step, .examples_done = done,
      .seed = o.seed, .batch = o.batch, .lr = o.lr, .lr_schedule = o.lr_schedule,
      .lr_scaling = o.lr_scaling, .lr_reference_batch = o.lr_reference_batch, .warmup_steps = o.warmup_steps,
      .epochs = o.epochs,
      .momentum = o.momentum, .loss = o.loss, .dataset = o.dataset,
      .train_examples = train.size(), .labels_hash = run.labels_hash,
      .history = run.results["epochs"].dump()};
}

// Saves a checkpoint for a stop (Ctrl-C or SIGTERM) and says how to go on.
int stop_for_signal(Run& run, int epochs_done, int step, long done, const std::string& where) {
  if (!run.writes_files) return kExitInterrupted;  // the process that writes saves the checkpoint and says so
  const char* what = StopSignals::received() == SIGTERM ? "SIGTERM" : "Ctrl-C";
  std::cout.flush();
  json& results = run.results;
  results["status"] = "interrupted";
  results["stopped_at"] = {{"epoch", epochs_done + 1}, {"step", step}};
  bool saved = false;
  try {
    save_checkpoint(run.checkpoint_path, make_checkpoint(run, epochs_done, step, done));
    saved = true;
  } catch (const CheckpointNotSupported& e) {
    std::cerr << "stopped by " << what << " " << where << "; nothing was saved: " << e.what() << "\n";
  } catch (const CheckpointError& e) {
    std::cerr << "stopped by " << what << " " << where << "; the checkpoint could not be saved: " << e.what()
              << "\n";
    results["status"] = "interrupted, checkpoint failed";
    results["total_seconds"] = run.total_timer.seconds();
    write_json(run.o, results);
    return kExitError;
  }
  if (saved) {
    results["checkpoint"] = run.checkpoint_path;
    std::cerr << "stopped by " << what << " " << where << "; saved the checkpoint " << run.checkpoint_path << "\n"
              << "continue with: " << resume_command(run.command, run.checkpoint_path) << "\n";
  }
  results["total_seconds"] = run.total_timer.seconds();
  write_json(run.o, results);
  return kExitInterrupted;
}

// The end of a diverged run: the message, the epoch's entry (`entry`) in the JSON, exit code 4.
int stop_diverged(Run& run, const std::string& message, json entry) {
  std::cout.flush();
  std::cerr << message << "\n";
  run.results["epochs"].push_back(std::move(entry));
  run.results["status"] = "diverged";
  run.results["total_seconds"] = run.total_timer.seconds();
  write_json(run.o, run.results);
  return kExitDiverged;
}

int steps_per_epoch(const Run& run) { return (run.train().size() + run.o.batch - 1) / run.o.batch; }

// The mean loss of the examples `s` counts (NaN for none), and the mean absolute error of their outputs (0 for none).
double mean_loss(const EpochStats& s) { return s.seen > 0 ? s.loss_sum / static_cast<double>(s.seen) : std::nan(""); }
double mean_abs(const EpochStats& s) { return s.seen > 0 ? s.abs_error_sum / static_cast<double>(s.seen) : 0.0; }

// With --loss mse, the mean absolute error of the outputs beside the loss (EpochStats::abs_error_sum).
bool shows_mae(const Run& run) { return run.o.loss == "mse" && run.engine->reports_mae(); }

// The header line, the settings with --verbose, and a note when --loss mse shows no MAE.
void print_training_header(const Run& run) {
  const TrainerOptions& o = run.o;
  std::cout << run.header << "\n";
  for (const std::string& choice : run.engine->gpu_choices()) std::cout << "gpu: " << choice << "\n";
  if (o.verbose)
    std::cout << "loss " << o.loss << ", " << o.epochs << " epochs, threads " << run.config.threads
              << (o.profile ? ", profiling every layer" : "")
              << (o.checkpoint_every > 0 ? ", a checkpoint every " + std::to_string(o.checkpoint_every) +
                                               " epochs to " + run.checkpoint_path
                                         : std::string())
              << "\n";
  std::cout.flush();
  if (o.loss == "mse" && !run.engine->reports_mae())
    std::cout << "note: stage " << run.stage.id << " does not compute the mean absolute error: no MAE below\n";
}

// One epoch's training pass.
struct EpochPass {
  EpochStats stats;
  double seconds = 0;    // the training pass alone
  bool partial = false;  // a resumed run's first epoch, started after run.start.step steps
};

// Trains epoch `epoch` (1-based) into `pass`, with its progress bar, stopping
// after the step with a NaN or Inf loss or a stop signal: returns the exit code
// of a run so stopped, else nullopt.
std::optional<int> train_one_epoch(Run& run, int epoch, EpochPass& pass) {
  const TrainerOptions& o = run.o;
  const Dataset& train = run.train();
  const ResumePoint& start = run.start;
  Engine& engine = *run.engine;
  // A resumed run may start inside an epoch: its engine then trains the
  // examples that epoch had left, in the order it would have seen them.
  pass.partial = epoch == start.epoch + 1 && start.examples_done > 0;
  const long offset = pass.partial ? start.examples_done : 0;
  Dataset rest;
  if (pass.partial) rest = remaining_examples(train, o.seed, epoch - 1, offset);
  const Dataset& part = pass.partial ? rest : train;
  if (o.profile) engine.reset_layer_times();
  const int steps = steps_per_epoch(run);
  const bool batch_loss = engine.reports_batch_loss();
  int step = pass.partial ? start.step : 0;
  try {
    const int epoch_width = static_cast<int>(std::to_string(o.epochs).size());
    ProgressBar bar(fmt("epoch %*d/%d", epoch_width, epoch, o.epochs), train.size(), o.progress);
    Timer timer;
    // The run's index of this epoch's next step: during a warm-up every step takes its own rate, set
    // between the steps (an engine calls on_batch after it queued a step and before the next).
    const long before = static_cast<long>(epoch - 1) * steps;
    engine.set_learning_rate(step_learning_rate(o, epoch - 1, before + step));
    pass.stats = engine.train_epoch(part, epoch - 1, [&](long done, double loss_sum) {
      ++step;
      if (before + step <= o.warmup_steps && step < steps)
        engine.set_learning_rate(step_learning_rate(o, epoch - 1, before + step));
      const long total_done = offset + done;
      const bool show_loss = std::isfinite(loss_sum) && done > 0;
      bar.update(total_done, show_loss ? fmt("loss %.4f", loss_sum / static_cast<double>(done)) : std::string());
      if (batch_loss && !std::isfinite(loss_sum)) throw StopEpoch{true, step, total_done, loss_sum};
      // After the last step the epoch is complete: it ends as usual and the
      // stop is taken at the epoch boundary (train_epochs).
      if (engine.stop_requested(StopSignals::received() != 0, false) && total_done < train.size())
        throw StopEpoch{false, step, total_done, loss_sum};
    });
    pass.seconds = timer.seconds();
    bar.finish();
  } catch (const NonFiniteLoss& bad) {
    // An engine that checks its loss late (the GPU engines) counts steps in
    // the Dataset it was given: after a resume inside this epoch, the
    // examples left after step start.step, so the epoch's step is start.step more.
    const int first_step = (pass.partial ? start.step : 0);
    return stop_diverged(run,
                         divergence_message(bad.loss_sum(), epoch, first_step + bad.step(), steps, o,
                                            first_step + bad.steps_queued()),
                         {{"epoch", epoch},
                          {"loss", nullptr},
                          {"step", first_step + bad.step()},
                          {"stopped_after_step", first_step + bad.steps_queued()}});
  } catch (const StopEpoch& stop) {
    if (!stop.diverged)
      return stop_for_signal(run, epoch - 1, stop.step, stop.examples_done,
                             "after step " + std::to_string(stop.step) + " of " + std::to_string(steps) +
                                 " in epoch " + std::to_string(epoch));
    return stop_diverged(run, divergence_message(stop.loss_sum, epoch, stop.step, steps, o),
                         {{"epoch", epoch}, {"loss", nullptr}, {"step", stop.step}});
  }
  if (o.profile) {
    run.last_times = engine.layer_times();
    run.last_batches = (pass.stats.seen + o.batch - 1) / o.batch;
  }
  return std::nullopt;
}

// Evaluates the validation set (with --val-fraction) and the test set after
// epoch `epoch`, prints its line and adds its entry to the JSON.
void evaluate_and_report_epoch(Run& run, int epoch, const EpochPass& pass) {
  const TrainerOptions& o = run.o;
  const EpochStats& stats = pass.stats;
  const bool validating = run.validating();
  const bool mae = shows_mae(run);
  const double loss = mean_loss(stats);
  const double images_per_s = pass.seconds > 0 ? static_cast<double>(stats.seen) / pass.seconds : 0.0;
  // The validation set first, then the test set, both with the engine's evaluate().
  Evaluation val_ev;
  if (validating) val_ev = evaluate_test(*run.engine, run.val());
  run.final_eval = evaluate_test(*run.engine, run.test());
  const Evaluation& ev = run.final_eval;
  run.trained = true;
  const double train_acc = percent(stats.correct, stats.seen);
  const double test_acc = percent(ev.stats.correct, ev.stats.seen);
  const double val_loss = val_ev.stats.seen > 0 ? val_ev.stats.loss_sum / static_cast<double>(val_ev.stats.seen) : 0.0;
  const std::string val_part =
      validating ? fmt("  val loss %.4f%s  val %.2f%%", val_loss,
                       mae ? fmt("  val MAE %.4f", mean_abs(val_ev.stats)).c_str() : "",
                       percent(val_ev.stats.correct, val_ev.stats.seen))
                 : std::string();
  const std::string train_mae = mae ? fmt("  MAE %.4f", mean_abs(stats)) : std::string();
  const std::string test_mae = mae ? fmt("  test MAE %.4f", mean_abs(ev.stats)) : std::string();
  const int epoch_width = static_cast<int>(std::to_string(o.epochs).size());
  std::string line = fmt("epoch %*d/%d  loss %.4f%s  train %.2f%%%s%s  test %.2f%%  %.2f s  %.0f img/s", epoch_width,
                         epoch, o.epochs, loss, train_mae.c_str(), train_acc, val_part.c_str(), test_mae.c_str(),
                         test_acc, pass.seconds, images_per_s);
  if (pass.partial)
    line += fmt("  (resumed after step %d: loss and train accuracy of its last %ld examples)", run.start.step,
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
                {"seconds", pass.seconds},
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
  if (pass.partial) {
    entry["resumed_after_step"] = run.start.step;
    entry["examples"] = stats.seen;
  }
  run.results["epochs"].push_back(entry);
}

// --checkpoint-every N: a checkpoint after every N-th epoch.
void checkpoint_if_due(Run& run, int epoch) {
  const TrainerOptions& o = run.o;
  if (o.checkpoint_every <= 0 || epoch % o.checkpoint_every != 0) return;
  // A checkpoint that cannot be written (a full disk) must not end the
  // run it protects: the previous one is still whole, so warn and go on.
  try {
    save_checkpoint(run.checkpoint_path, make_checkpoint(run, epoch, 0, 0));
    if (o.verbose) std::cout << "saved the checkpoint " << run.checkpoint_path << " after epoch " << epoch << "\n";
  } catch (const CheckpointError& e) {
    std::cerr << "warning: " << e.what() << "; training goes on\n";
  }
}

// With nothing trained in this run (--epochs 0, or a checkpoint that has done
// them all), says so and evaluates the test set for the report.
void evaluate_untrained(Run& run) {
  const TrainerOptions& o = run.o;
  if (o.epochs == 0) {
    const std::string weights = !o.resume.empty() ? "the weights of the checkpoint " + o.resume
                                : !o.load.empty()  ? "the weights loaded from " + o.load
                                                   : "the initial weights of seed " + std::to_string(o.seed);
    std::cout << "--epochs 0: nothing trained; the figures below are those of " << weights << "\n";
  } else {
    std::cout << "the run has done " << run.start.epoch << " epochs"
              << (run.start.step > 0 ? " and " + std::to_string(run.start.step) + " steps of the next"
                                     : std::string())
              << " of the --epochs " << o.epochs << " asked for: nothing left to train (raise --epochs to go on)\n";
  }
  run.final_eval = evaluate_test(*run.engine, run.test());
}

// The engine's one-off costs (Engine::warm_up), paid before the first epoch trained here and timed
// apart from it, so that every epoch's seconds are the steady step's: a line, and "setup" in the JSON.
void warm_up(Run& run) {
  const TrainerOptions& o = run.o;
  if (run.start.epoch >= o.epochs) return;  // nothing to train
  const long per_epoch = steps_per_epoch(run);
  if (o.warmup_steps > per_epoch * o.epochs)
    std::cerr << "warning: --warmup-steps " << o.warmup_steps << " is longer than the run (" << per_epoch * o.epochs
              << " steps of " << o.batch << "): the rate never reaches its full value\n";
  // The first step's rate, so that a step captured now is the one that epoch replays.
  run.engine->set_learning_rate(step_learning_rate(o, run.start.epoch, run.start.epoch * per_epoch + run.start.step));
  Timer timer;
  const std::string what = run.engine->warm_up(run.train());
  const double seconds = timer.seconds();
  if (what.empty()) return;
  std::cout << fmt("setup %.2f s, before the first epoch and not in its seconds: ", seconds) << what << "\n";
  std::cout.flush();
  run.results["setup"] = {{"seconds", seconds}, {"what", what}};
}

}  // namespace

std::optional<int> train_epochs(Run& run) {
  const TrainerOptions& o = run.o;
  print_training_header(run);
  warm_up(run);
  {
    const StopSignals stop_signals;  // Ctrl-C stops after the current step while it lives
    for (int epoch = run.start.epoch + 1; epoch <= o.epochs; ++epoch) {
      EpochPass pass;
      if (const std::optional<int> stopped = train_one_epoch(run, epoch, pass)) return stopped;
      const double loss = mean_loss(pass.stats);
      if (!std::isfinite(loss))
        // An engine that reports its loss per batch stopped in train_one_epoch
        // at the first bad step; here the step is not known.
        return stop_diverged(run, divergence_message(loss, epoch, 0, steps_per_epoch(run), o),
                             {{"epoch", epoch}, {"loss", nullptr}, {"seconds", pass.seconds}});
      evaluate_and_report_epoch(run, epoch, pass);
      checkpoint_if_due(run, epoch);
      if (run.engine->stop_requested(StopSignals::received() != 0, true) && epoch < o.epochs)
        return stop_for_signal(run, epoch, 0, 0, "after epoch " + std::to_string(epoch));
    }
  }
  if (!run.trained) evaluate_untrained(run);
  return std::nullopt;
}


}  // namespace course::trainer_steps
