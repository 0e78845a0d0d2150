// The diverged-loss check of the GPU engines, without a GPU: the bookkeeping of
// common/train/loss_check.hpp on host "slots", and the trainer driving an engine that
// checks its loss that way (NonFiniteLoss: exit 4 naming the first bad step, a
// Ctrl-C inside the lag, a resume inside the epoch, the nondeterminism note).
#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/train/checkpoint.hpp"
#include "common/train/loss_check.hpp"
#include "common/train/trainer.hpp"
#include "expect_contains.hpp"
#include "one_weight_engine.hpp"
#include "trainer_process.hpp"
#include "trainer_run.hpp"

namespace course {
namespace {

namespace fs = std::filesystem;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// Slots over a list of running sums, as a device would hold them after each
// step (sums[s]: after step s + 1). Checks that a slot is never recorded again
// before it was read, and counts the reads.
struct ListSlots {
  std::vector<double> sums;
  std::vector<int> step_in_slot;  // the 0-based step whose copy a slot holds; -1: free
  int recorded = 0, reads = 0;

  ListSlots(std::vector<double> running, int lag)
      : sums(std::move(running)), step_in_slot(static_cast<std::size_t>(lag) + 1, -1) {}
  void record(int slot) {
    auto& held = step_in_slot.at(static_cast<std::size_t>(slot));
    EXPECT_EQ(held, -1) << "slot " << slot << " recorded again before step " << held + 1 << " was read";
    held = recorded++;
  }
  double wait(int slot) {
    auto& held = step_in_slot.at(static_cast<std::size_t>(slot));
    EXPECT_GE(held, 0) << "slot " << slot << " read before anything was recorded there";
    const double sum = sums.at(static_cast<std::size_t>(held));
    held = -1;
    ++reads;
    return sum;
  }
};

// Running sums of `steps` steps of loss 0.5 each, NaN (or `bad`) from step `first_bad` on (1-based; 0: never).
std::vector<double> running_sums(int steps, int first_bad, double bad = kNaN) {
  std::vector<double> sums;
  double sum = 0;
  for (int s = 1; s <= steps; ++s) {
    sum += (first_bad > 0 && s >= first_bad) ? bad : 0.5;
    sums.push_back(sum);
  }
  return sums;
}

// ---- DelayedLossCheck ---------------------------------------------------------------

TEST(DelayedLossCheck, FiniteStepsAreEachReadLagStepsLate) {
  const int lag = 4;
  ListSlots slots(running_sums(10, 0), lag);
  DelayedLossCheck<ListSlots> check(slots, lag);
  for (int q = 1; q <= 10; ++q) {
    check.after_step(32L * q);
    EXPECT_EQ(check.queued(), q);
    EXPECT_EQ(check.checked(), std::max(0, q - lag)) << "after step " << q;
  }
  check.finish();
  EXPECT_EQ(check.checked(), 10);
  EXPECT_EQ(slots.reads, 10) << "every step read once";
}

TEST(DelayedLossCheck, FirstBadStepIsNamedLagStepsLater) {
  const int lag = 4, batch = 32;
  ListSlots slots(running_sums(12, 7), lag);
  DelayedLossCheck<ListSlots> check(slots, lag);
  for (int q = 1; q <= 10; ++q) check.after_step(static_cast<long>(batch) * q);  // steps 1..6 read: finite
  EXPECT_EQ(check.checked(), 6);
  try {
    check.after_step(batch * 11L);
    FAIL() << "step 7's NaN was not found when step 11 was queued";
  } catch (const NonFiniteLoss& e) {
    EXPECT_EQ(e.step(), 7);
    EXPECT_EQ(e.examples_done(), 7L * batch);
    EXPECT_EQ(e.steps_queued(), 11);
    EXPECT_TRUE(std::isnan(e.loss_sum()));
    EXPECT_STREQ(e.what(), "the running loss sum is NaN after step 7");
  }
}

TEST(DelayedLossCheck, BadStepInTheLastLagStepsIsFoundAtTheEnd) {
  const int lag = 4;
  ListSlots slots(running_sums(8, 7, kInf), lag);
  DelayedLossCheck<ListSlots> check(slots, lag);
  for (int q = 1; q <= 8; ++q) check.after_step(10L * q);
  try {
    check.finish();
    FAIL() << "step 7's Inf was not found at the end";
  } catch (const NonFiniteLoss& e) {
    EXPECT_EQ(e.step(), 7);
    EXPECT_EQ(e.steps_queued(), 8);
    EXPECT_TRUE(std::isinf(e.loss_sum()));
    EXPECT_STREQ(e.what(), "the running loss sum is Inf after step 7");
  }
}

TEST(DelayedLossCheck, LagZeroReadsEveryStepAtOnce) {
  ListSlots slots(running_sums(5, 3), 0);
  DelayedLossCheck<ListSlots> check(slots, 0);
  check.after_step(1);
  check.after_step(2);
  EXPECT_EQ(check.checked(), 2);
  EXPECT_THROW(check.after_step(3), NonFiniteLoss);
}

TEST(DelayedLossCheck, NegativeLagIsRefused) {
  ListSlots slots({}, 0);
  EXPECT_THROW(DelayedLossCheck<ListSlots>(slots, -1), std::invalid_argument);
}

// ---- train_steps_checked: the loop every GPU engine runs ------------------------------

struct Stop {};  // what the trainer throws from its callback to stop (a stand-in)

TEST(TrainStepsChecked, PassesEveryStepToTheCallbackWithNaNLoss) {
  ListSlots slots(running_sums(4, 0), kLossCheckLag);
  std::vector<int> trained;
  std::vector<long> done;
  train_steps_checked(4, 32, 100, slots, kLossCheckLag, [&](int s) { trained.push_back(s); },
                      [&](long examples, double loss) {
                        done.push_back(examples);
                        EXPECT_TRUE(std::isnan(loss)) << "the loss stays on the device";
                      });
  EXPECT_EQ(trained, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(done, (std::vector<long>{32, 64, 96, 100})) << "the last batch holds the 4 examples left";
  EXPECT_EQ(slots.reads, 4);
}

TEST(TrainStepsChecked, AStopInsideTheLagOfABadStepBecomesNonFiniteLoss) {
  ListSlots slots(running_sums(7, 5), kLossCheckLag);
  try {
    train_steps_checked(7, 32, 224, slots, kLossCheckLag, [](int) {}, [](long examples, double) {
      if (examples == 6 * 32) throw Stop{};  // Ctrl-C after step 6, before step 5 was read
    });
    FAIL() << "nothing was thrown";
  } catch (const NonFiniteLoss& e) {
    EXPECT_EQ(e.step(), 5);
    EXPECT_EQ(e.steps_queued(), 6);
  } catch (const Stop&) {
    FAIL() << "the stop passed although step 5 had diverged: its checkpoint would hold a diverged model";
  }
}

TEST(TrainStepsChecked, AStopAfterFiniteStepsPassesThroughAfterReadingThem) {
  ListSlots slots(running_sums(7, 0), kLossCheckLag);
  EXPECT_THROW(train_steps_checked(7, 32, 224, slots, kLossCheckLag, [](int) {},
                                   [](long examples, double) {
                                     if (examples == 3 * 32) throw Stop{};
                                   }),
               Stop);
  EXPECT_EQ(slots.reads, 3) << "the three steps queued were read before the stop passed";
}

// ---- the trainer with an engine that checks its loss late ------------------------------

const StageInfo kLateLossStage{"04_cuda_matmul", "late loss (test)", false};

struct LateOptions {
  long poison_at_step = 0;  // the loss is NaN from this step on (counted from 1 over the engine's life); 0: never
  long signal_at_step = 0;  // raise SIGINT during this step; 0: never
  std::string nondeterminism;
};

// An engine that trains nothing but behaves as a GPU engine towards the
// trainer: its running loss sum lives "on the device" (a member), the
// callback gets NaN, and train_steps_checked reads the sum kLossCheckLag steps late.
class LateLossEngine : public testkit::OneWeightEngine {
 public:
  LateLossEngine(const EngineConfig& c, LateOptions o) : OneWeightEngine(0.0f, 0.0f), c_(c), o_(std::move(o)) {}
  std::string device() const override { return "late-loss test engine"; }
  std::string nondeterminism() const override { return o_.nondeterminism; }

  EpochStats train_epoch(const Dataset& train, int, const BatchCallback& on_batch) override {
    struct Slots {
      const double* running;
      std::vector<double> copies = std::vector<double>(kLossCheckLag + 1);
      void record(int slot) { copies[static_cast<std::size_t>(slot)] = *running; }
      double wait(int slot) { return copies[static_cast<std::size_t>(slot)]; }
    } slots{&running_};
    running_ = 0;
    const int steps = (train.size() + c_.batch - 1) / c_.batch;
    train_steps_checked(steps, c_.batch, train.size(), slots, kLossCheckLag,
                        [&](int) {
                          ++life_steps_;
                          running_ += (o_.poison_at_step > 0 && life_steps_ >= o_.poison_at_step) ? kNaN : 0.25;
                          w_[0] += 1.0f;
                          if (life_steps_ == o_.signal_at_step) std::raise(SIGINT);
                        },
                        on_batch);
    EpochStats s;
    s.loss_sum = running_;
    s.seen = train.size();
    return s;
  }

 private:
  EngineConfig c_;
  LateOptions o_;
  double running_ = 0;
  long life_steps_ = 0;
};

EngineFactory late(LateOptions o = {}) {
  return [o](const EngineConfig& c) -> std::unique_ptr<Engine> { return std::make_unique<LateLossEngine>(c, o); };
}

// 200 synthetic examples in batches of 32: 7 steps per epoch, the last one of 8 examples.
trainer_run::RunResult run_late_loss(const EngineFactory& factory, int epochs, std::vector<std::string> more = {}) {
  std::vector<std::string> args = {"s04_train", "--dataset", "synthetic", "--limit",  "200", "--batch",
                                   "32",        "--epochs",  std::to_string(epochs), "--no-progress"};
  args.insert(args.end(), more.begin(), more.end());
  return trainer_run::run_in_process(kLateLossStage, factory, args);
}

fs::path loss_check_dir() { return trainer_process::fresh_dir("course_loss_check"); }

using trainer_process::read_json;

TEST(TrainerLateLossCheck, StopsNamingTheFirstBadStepAndWhereItStopped) {
  const fs::path json_path = loss_check_dir() / "run.json";
  LateOptions o;
  o.poison_at_step = 10;  // epoch 2, step 3 of 7
  const trainer_run::RunResult r = run_late_loss(late(o), 3, {"--json", json_path.string()});
  ASSERT_EQ(r.code, kExitDiverged) << r.out << r.err;
  EXPECT_CONTAINS(r.err, "loss is NaN at epoch 2, step 3 of 7: the run diverged; try a smaller --lr");
  EXPECT_CONTAINS(r.err, "reads it back a few steps late: the run stopped after step 7)");
  EXPECT_CONTAINS(r.out, "epoch 1/3") << "epoch 1 was fine";
  EXPECT_EQ(r.out.find("epoch 2/3"), std::string::npos) << "no epoch line for a diverged epoch";
  const nlohmann::json j = read_json(json_path);
  EXPECT_EQ(j["status"], "diverged");
  ASSERT_EQ(j["epochs"].size(), 2u);
  EXPECT_EQ(j["epochs"][1]["step"], 3);
  EXPECT_EQ(j["epochs"][1]["stopped_after_step"], 7);
}

TEST(TrainerLateLossCheck, StopsLagStepsAfterTheBadOne) {
  LateOptions o;
  o.poison_at_step = 2;
  const trainer_run::RunResult r = run_late_loss(late(o), 1);
  ASSERT_EQ(r.code, kExitDiverged);
  EXPECT_CONTAINS(r.err, "at epoch 1, step 2 of 7");
  EXPECT_CONTAINS(r.err, "the run stopped after step " + std::to_string(2 + kLossCheckLag) + ")");
}

// Ctrl-C one step after a bad step, before it was read: the run must report
// the divergence (exit 4), not save the diverged model as a checkpoint (exit 130).
TEST(TrainerLateLossCheck, CtrlCInsideTheLagReportsTheDivergenceAndSavesNothing) {
  const fs::path ckpt = loss_check_dir() / "run.ckpt";
  LateOptions o;
  o.poison_at_step = 3;
  o.signal_at_step = 4;
  const trainer_run::RunResult r = run_late_loss(late(o), 2, {"--checkpoint", ckpt.string()});
  EXPECT_EQ(r.code, kExitDiverged) << r.out << r.err;
  EXPECT_CONTAINS(r.err, "at epoch 1, step 3 of 7");
  EXPECT_CONTAINS(r.err, "the run stopped after step 4)");
  EXPECT_FALSE(fs::exists(ckpt)) << "a checkpoint of a diverged run was saved";
}

// A run stopped after step 2 and resumed: the resumed engine counts its steps
// from the examples it was given, and the trainer adds the two already done.
TEST(TrainerLateLossCheck, StepsOfAResumedEpochCountFromItsStart) {
  const fs::path ckpt = loss_check_dir() / "run.ckpt";
  LateOptions stop;
  stop.signal_at_step = 2;
  ASSERT_EQ(run_late_loss(late(stop), 2, {"--checkpoint", ckpt.string()}).code, kExitInterrupted);
  LateOptions poisoned;
  poisoned.poison_at_step = 2;  // the resumed engine's second step: step 4 of the epoch
  const trainer_run::RunResult r = run_late_loss(late(poisoned), 2, {"--resume", ckpt.string()});
  ASSERT_EQ(r.code, kExitDiverged) << r.out << r.err;
  EXPECT_CONTAINS(r.err, "loss is NaN at epoch 1, step 4 of 7");
  EXPECT_CONTAINS(r.err, "the run stopped after step 7)") << "5 steps were left, all queued";
}

TEST(TrainerLateLossCheck, AnEngineThatIsNotDeterministicSaysSoWhenCheckpointing) {
  LateOptions o;
  o.nondeterminism = "this test engine adds in any order";
  const fs::path ckpt = loss_check_dir() / "run.ckpt";
  trainer_run::RunResult r = run_late_loss(late(o), 1, {"--checkpoint-every", "1", "--checkpoint", ckpt.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_CONTAINS(r.err, "note: this test engine adds in any order, so a resumed run matches an uninterrupted one "
                         "only to rounding, not bit for bit");
  r = run_late_loss(late(o), 2, {"--resume", ckpt.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_CONTAINS(r.err, "only to rounding");
  r = run_late_loss(late(o), 1);
  EXPECT_EQ(r.err.find("only to rounding"), std::string::npos) << "no checkpoint, nothing to say";
  r = run_late_loss(late(), 1, {"--checkpoint-every", "1", "--checkpoint", ckpt.string()});
  EXPECT_EQ(r.err.find("only to rounding"), std::string::npos) << "a deterministic engine";
}

}  // namespace
}  // namespace course
