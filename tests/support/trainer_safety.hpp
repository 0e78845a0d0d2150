// The safety checks every stage's trainer must pass, written once for the GPU
// stages (04, 05, 06 and those after them): resume equals an uninterrupted
// run, bit for bit; Ctrl-C inside an epoch (at a chosen step, in this process,
// and as a real SIGINT to the trainer binary) saves a checkpoint that resumes
// to the same bits; a diverging run stops within a few steps of its first NaN
// loss with exit code 4. The tests that call these skip first when there is no GPU.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "common/train/checkpoint.hpp"
#include "common/train/loss_check.hpp"
#include "common/model/model_file.hpp"
#include "common/train/trainer.hpp"
#include "trainer_process.hpp"
#include "trainer_run.hpp"

namespace course::trainer_safety {

namespace fs = std::filesystem;

/// A stage's trainer as a process: its binary, the arguments every run shares
/// (model, data, batch; --no-progress is added), and, for a stage that
/// measures its algorithms in each run (stage 06: cudnnFind, timed under
/// whatever else runs on the GPU, so that two runs may choose differently and
/// then round differently):
/// - `choices`: the part of a run's stdout naming the algorithms it chose (with
///   --verbose), which must be the same in every run compared;
/// - `choose_as`: the arguments that make a new run take the algorithms the run
///   that wrote a checkpoint chose (stage 06: --conv-algos-from FILE), given to
///   the uninterrupted run, which otherwise measures apart from the run it is compared with;
/// - `takes_recorded`: what a run that takes a checkpoint's algorithms prints
///   (the resumed run, and the one given `choose_as`): a resumed run that measured
///   again instead would fail here, whatever it chose.
struct TrainerBinary {
  fs::path exe;
  std::vector<std::string> args;
  std::function<std::string(const std::string& out)> choices;
  std::function<std::vector<std::string>(const std::string& checkpoint)> choose_as = {};
  std::string takes_recorded = {};
};

/// `base` + `more` + --no-progress.
inline std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  base.push_back("--no-progress");
  return base;
}

using trainer_run::same_bits;

/// The model files `want` and `got` hold the same parameters, bit for bit, and
/// every run chose the same algorithms (all of `choices` equal): the runs
/// compared must do the same arithmetic, so a run that chose otherwise is a failure.
inline void expect_same_model(const std::string& want, const std::string& got, const std::vector<std::string>& choices) {
  const ModelFile a = load_model(want), b = load_model(got);
  for (const std::string& c : choices)
    EXPECT_EQ(c, choices.front()) << "the runs compared chose different algorithms (each run's choice is listed "
                                     "above): a resumed run must take those its checkpoint recorded";
  EXPECT_TRUE(same_bits(b.tensors, a.tensors)) << "the resumed run did not end bit for bit where the "
                                                  "uninterrupted one did";
}

/// The arguments that make an uninterrupted run choose as the run that wrote `checkpoint` did (none for most stages).
inline std::vector<std::string> choose_as(const TrainerBinary& t, const std::string& checkpoint) {
  return t.choose_as ? t.choose_as(checkpoint) : std::vector<std::string>{};
}

/// A run that should have taken the algorithms a checkpoint recorded says so (stages that measure theirs).
inline void expect_takes_recorded(const TrainerBinary& t, const trainer_process::Finished& r, const char* run) {
  if (t.takes_recorded.empty()) return;
  EXPECT_NE(r.out.find(t.takes_recorded), std::string::npos)
      << "the " << run << " run does not say '" << t.takes_recorded << "':\n" << r.out << r.err;
}

/// What run `r`'s stdout says it chose ("" when the stage chooses nothing).
inline std::string choices_of(const TrainerBinary& t, const trainer_process::Finished& r) {
  return t.choices ? t.choices(r.out) : std::string();
}

/// Trains 1 epoch with a checkpoint; `epochs` epochs in one go (choosing as that
/// run did, `choose_as`); and the rest resumed from the checkpoint: the two
/// model files must match, bit for bit.
inline void expect_resume_after_an_epoch_equals_uninterrupted(const TrainerBinary& t, const fs::path& dir,
                                                              int epochs) {
  using trainer_process::run;
  const std::string want = (dir / "uninterrupted.bin").string(), got = (dir / "resumed.bin").string();
  const std::string ckpt = (dir / "first.ckpt").string();
  const auto first = run(t.exe, dir, "first",
                         with(t.args, {"--epochs", "1", "--checkpoint-every", "1", "--checkpoint", ckpt}));
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  EXPECT_EQ(first.err.find("cannot checkpoint"), std::string::npos) << first.err;
  std::vector<std::string> whole_args = {"--epochs", std::to_string(epochs), "--save", want};
  for (const std::string& a : choose_as(t, ckpt)) whole_args.push_back(a);
  const auto whole = run(t.exe, dir, "whole", with(t.args, whole_args));
  ASSERT_EQ(whole.code, 0) << whole.out << whole.err;
  const auto rest = run(t.exe, dir, "rest", with(t.args, {"--epochs", std::to_string(epochs), "--resume", ckpt,
                                                          "--save", got}));
  ASSERT_EQ(rest.code, 0) << rest.out << rest.err;
  EXPECT_NE(rest.out.find("resumed " + ckpt + " after epoch 1"), std::string::npos) << rest.out;
  SCOPED_TRACE("logs in " + dir.string());
  if (t.choose_as) expect_takes_recorded(t, whole, "uninterrupted");
  expect_takes_recorded(t, rest, "resumed");
  expect_same_model(want, got, {choices_of(t, whole), choices_of(t, first), choices_of(t, rest)});
}

/// The seconds of epoch `epoch`'s line in a trainer's stdout ("epoch 2/6  loss ... 0.43 s ..."), or -1.
inline double epoch_seconds(const std::string& out, int epoch) {
  const std::regex line("epoch +" + std::to_string(epoch) + "/[0-9]+ .*  ([0-9.]+) s  [0-9]+ img/s");
  std::smatch m;
  return std::regex_search(out, m, line) ? std::stod(m[1]) : -1.0;
}

/// A real SIGINT to the trainer binary inside an epoch: the run stops after
/// the step it is in with exit code 130 and a checkpoint, and the resumed run
/// ends where an uninterrupted run does. The signal is sent half an epoch (as
/// long as epoch 2 took) after the line of epoch 2 appears; should it land on
/// an epoch's boundary or after the end, the test tries again at other points.
inline void expect_sigint_inside_an_epoch_then_resume_equals_uninterrupted(const TrainerBinary& t,
                                                                           const fs::path& dir) {
  using namespace trainer_process;
  const int epochs = 6;
  const std::string ckpt = (dir / "stopped.ckpt").string(), json_path = (dir / "stopped.json").string();
  const std::string want = (dir / "uninterrupted.bin").string(), got = (dir / "resumed.bin").string();
  int stopped_epoch = 0, stopped_step = 0;
  Finished stopped;
  for (double fraction : {0.5, 0.3, 0.7, 0.15}) {
    fs::remove(ckpt);
    fs::remove(json_path);
    const Process p = start(t.exe, dir, "stopped", with(t.args, {"--epochs", std::to_string(epochs), "--checkpoint",
                                                                 ckpt, "--json", json_path}));
    ASSERT_GT(p.pid, 0);
    double seconds = -1;
    const bool seen = wait_until(p, [&] {
      seconds = epoch_seconds(slurp(p.out), 2);
      return seconds >= 0;
    });
    if (!seen) {
      const Finished early = wait_for(p);
      FAIL() << "the trainer ended (exit " << early.code << ") before its second epoch line:\n"
             << early.out << early.err;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(fraction * seconds));
    kill(p.pid, SIGINT);
    stopped = wait_for(p);
    if (stopped.code == 0) continue;  // it ended before the signal: try earlier
    ASSERT_EQ(stopped.code, kExitInterrupted) << stopped.out << stopped.err;
    std::ifstream in(json_path);
    const nlohmann::json j = nlohmann::json::parse(in);
    EXPECT_EQ(j["status"], "interrupted");
    stopped_epoch = j["stopped_at"]["epoch"].get<int>();
    stopped_step = j["stopped_at"]["step"].get<int>();
    if (stopped_step > 0) break;  // inside an epoch: what this test is about
  }
  ASSERT_GT(stopped_step, 0) << "the SIGINT never landed inside an epoch (4 tries); last run:\n"
                             << stopped.out << stopped.err;
  SCOPED_TRACE("stopped by SIGINT at epoch " + std::to_string(stopped_epoch) + ", step " +
               std::to_string(stopped_step) + " (logs in " + dir.string() + ")");
  EXPECT_NE(stopped.err.find("stopped by Ctrl-C after step " + std::to_string(stopped_step)), std::string::npos)
      << stopped.err;
  EXPECT_NE(stopped.err.find("continue with: "), std::string::npos) << stopped.err;

  const auto rest = run(t.exe, dir, "rest", with(t.args, {"--epochs", std::to_string(epochs), "--resume", ckpt,
                                                          "--save", got}));
  ASSERT_EQ(rest.code, 0) << rest.out << rest.err;
  EXPECT_NE(rest.out.find("(resumed after step " + std::to_string(stopped_step)), std::string::npos) << rest.out;
  std::vector<std::string> whole_args = {"--epochs", std::to_string(epochs), "--save", want};
  for (const std::string& a : choose_as(t, ckpt)) whole_args.push_back(a);
  const auto whole = run(t.exe, dir, "whole", with(t.args, whole_args));
  ASSERT_EQ(whole.code, 0) << whole.out << whole.err;
  if (t.choose_as) expect_takes_recorded(t, whole, "uninterrupted");
  expect_takes_recorded(t, rest, "resumed");
  expect_same_model(want, got, {choices_of(t, whole), choices_of(t, stopped), choices_of(t, rest)});
}

/// A learning rate of 1e6: exit code 4, the divergence message naming epoch 1
/// and a step, and the run stopped at most kLossCheckLag steps after it.
inline void expect_huge_learning_rate_stops_with_exit_code_4(const TrainerBinary& t, const fs::path& dir) {
  const auto r = trainer_process::run(t.exe, dir, "diverge", with(t.args, {"--epochs", "3", "--lr", "1e6"}));
  ASSERT_EQ(r.code, kExitDiverged) << r.out << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex("loss is (NaN|Inf) at epoch 1, step ([0-9]+) of ([0-9]+): the run "
                                                     "diverged; try a smaller --lr, e.g. 0.02 \\(the default\\) \\(now 1e\\+06\\)")))
      << r.err;
  const int step = std::stoi(m[2]), steps = std::stoi(m[3]);
  std::smatch s;
  ASSERT_TRUE(std::regex_search(r.err, s, std::regex("the run stopped after step ([0-9]+)\\)"))) << r.err;
  const int stopped = std::stoi(s[1]);
  EXPECT_GE(stopped, step);
  EXPECT_LE(stopped, std::min(step + kLossCheckLag, steps)) << "it ran on past the check's lag";
}

// ---- in this process: Ctrl-C at a chosen step ---------------------------------------

/// An engine that forwards everything to `inner` and raises SIGINT during the
/// `stop_at`-th step of its life (counted over every epoch, from 1): Ctrl-C at a
/// step chosen exactly, which a signal from outside cannot promise.
class StopAtStep : public Engine {
 public:
  StopAtStep(std::unique_ptr<Engine> inner, long stop_at) : inner_(std::move(inner)), stop_at_(stop_at) {}
  std::string device() const override { return inner_->device(); }
  void set_learning_rate(double lr) override { inner_->set_learning_rate(lr); }
  EpochStats train_epoch(const Dataset& train, int epoch, const BatchCallback& on_batch) override {
    return inner_->train_epoch(train, epoch, [&](long done, double loss) {
      if (++steps_ == stop_at_) std::raise(SIGINT);
      if (on_batch) on_batch(done, loss);
    });
  }
  EpochStats evaluate(const Dataset& data, std::vector<int>* predictions) override {
    return inner_->evaluate(data, predictions);
  }
  std::vector<NamedTensor> get_parameters() override { return inner_->get_parameters(); }
  void set_parameters(const std::vector<NamedTensor>& p) override { inner_->set_parameters(p); }
  std::vector<NamedTensor> get_optimizer_state() override { return inner_->get_optimizer_state(); }
  void set_optimizer_state(const std::vector<NamedTensor>& s) override { inner_->set_optimizer_state(s); }
  bool reports_batch_loss() const override { return inner_->reports_batch_loss(); }
  std::string nondeterminism() const override { return inner_->nondeterminism(); }
  EngineState engine_state() const override { return inner_->engine_state(); }

 private:
  std::unique_ptr<Engine> inner_;
  long stop_at_;
  long steps_ = 0;
};

/// run_trainer in this process with `args` (the program name first); returns its exit code,
/// and its output in `log` when given.
inline int run_in_process(const StageInfo& stage, const EngineFactory& make, std::vector<std::string> args,
                          std::string* log = nullptr) {
  const trainer_run::RunResult r = trainer_run::run_in_process(stage, make, std::move(args));
  if (log) *log = r.out + r.err;
  return r.code;
}

/// Ctrl-C during each step in `stop_steps` (counted over the run, from 1), in
/// this process, through the trainer with `stage`'s engine: the run stops
/// after that step with a checkpoint, and resumed it ends with parameters and
/// velocities bit-identical to a run never stopped. `args` are the trainer's
/// (without the program name); every run trains `epochs` epochs.
inline void expect_ctrl_c_at_steps_then_resume_equals_uninterrupted(const StageInfo& stage, const EngineFactory& make,
                                                                    const std::vector<std::string>& args, int epochs,
                                                                    const std::vector<long>& stop_steps,
                                                                    const fs::path& dir) {
  auto argv = [&](std::vector<std::string> more) {
    std::vector<std::string> a = {"trainer"};
    a.insert(a.end(), args.begin(), args.end());
    a.insert(a.end(), {"--epochs", std::to_string(epochs), "--no-progress"});
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  const std::string want_path = (dir / "uninterrupted.ckpt").string();
  std::string log;
  ASSERT_EQ(run_in_process(stage, make,
                           argv({"--checkpoint-every", std::to_string(epochs), "--checkpoint", want_path}), &log),
            0)
      << log;
  const Checkpoint want = load_checkpoint(want_path);
  for (long at : stop_steps) {
    SCOPED_TRACE("Ctrl-C during step " + std::to_string(at) + " of the run");
    const std::string path = (dir / "stopped.ckpt").string();
    fs::remove(path);
    const EngineFactory stopping = [&](const EngineConfig& c) -> std::unique_ptr<Engine> {
      return std::make_unique<StopAtStep>(make(c), at);
    };
    ASSERT_EQ(run_in_process(stage, stopping, argv({"--checkpoint", path}), &log), kExitInterrupted) << log;
    const Checkpoint saved = load_checkpoint(path);
    EXPECT_GT(saved.step, 0) << "this test means to stop inside an epoch";
    ASSERT_EQ(run_in_process(stage, make, argv({"--resume", path, "--checkpoint-every", std::to_string(epochs)}),
                             &log),
              0)
        << log;
    const Checkpoint got = load_checkpoint(path);
    EXPECT_EQ(got.epoch, epochs);
    EXPECT_TRUE(same_bits(got.model.tensors, want.model.tensors)) << "parameters";
    EXPECT_TRUE(same_bits(got.optimizer, want.optimizer)) << "velocities";
  }
}

// ---- in this process: the first NaN step of an engine -------------------------------

/// `make()` builds a GPU engine (begin_epoch, train_batch, end_epoch, as
/// train_epoch_in_batches drives them) with a learning rate that makes it
/// diverge within an epoch of `train`. Its train_epoch must throw
/// NonFiniteLoss naming the first step whose loss is NaN or Inf: an engine
/// trained that many steps has a non-finite loss sum, one trained a step fewer
/// a finite one; and it must have queued at most kLossCheckLag steps more.
template <typename Make>
void expect_first_bad_step_named(Make make, const Dataset& train) {
  auto engine = make();
  int bad = 0, queued = 0, callbacks = 0;
  try {
    engine->train_epoch(train, 0, [&](long, double) { ++callbacks; });
  } catch (const NonFiniteLoss& e) {
    bad = e.step();
    queued = e.steps_queued();
  }
  ASSERT_GT(bad, 0) << "the loss stayed finite for a whole epoch: this test needs a diverging run";
  EXPECT_GE(queued, bad);
  EXPECT_LE(queued, bad + kLossCheckLag) << "the engine ran on past the check's lag";
  EXPECT_LE(callbacks, queued);
  auto loss_sum_after = [&](int steps) {
    auto fresh = make();
    fresh->begin_epoch(train, 0);
    for (int b = 0; b < steps; ++b) fresh->train_batch(b);
    return fresh->end_epoch().loss_sum;
  };
  EXPECT_TRUE(std::isfinite(loss_sum_after(bad - 1))) << "a step before step " << bad << " was already bad";
  EXPECT_FALSE(std::isfinite(loss_sum_after(bad))) << "step " << bad << " was not bad";
}

}  // namespace course::trainer_safety
