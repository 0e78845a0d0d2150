// Checkpoints, resume, Ctrl-C and divergence, with a small deterministic SGD
// engine defined here: it shuffles with course::Batcher like every stage and
// keeps a momentum velocity, so "resume equals uninterrupted" is a real test
// of the order, the step and the optimizer state a checkpoint restores.
#include <gtest/gtest.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/train/checkpoint.hpp"
#include "common/data/data.hpp"
#include "common/core/rng.hpp"
#include "common/train/trainer.hpp"
#include "expect_contains.hpp"
#include "small_checkpoint.hpp"
#include "trainer_process.hpp"
#include "trainer_run.hpp"

namespace course {
namespace {

namespace fs = std::filesystem;


// ---- a small engine that really trains -------------------------------------------

struct SgdOptions {
  bool reports_loss = true;     // Engine::reports_batch_loss()
  bool can_checkpoint = true;   // exposes its velocities
  long signal_at_step = 0;      // raise `signal` during this step (counted from 1 over the engine's life); 0: never
  int signal = SIGINT;
};

// The options of an engine that raises `signal` (Ctrl-C's unless given) during step `step` of its life.
SgdOptions interrupted_at(long step, int signal = SIGINT) {
  SgdOptions options;
  options.signal_at_step = step;
  options.signal = signal;
  return options;
}

// A linear model trained by SGD with momentum on the squared error of one
// score per example against label / 10: w [D], b [classes], and a velocity for
// each. Float arithmetic in a fixed order, so two runs that see the same
// batches in the same order from the same state end bit for bit equal.
class SgdEngine : public Engine {
 public:
  SgdEngine(const EngineConfig& c, SgdOptions options)
      : c_(c), options_(options), w_({static_cast<int>(c.input.size())}), b_({c.classes}),
        vw_({static_cast<int>(c.input.size())}), vb_({c.classes}) {
    Rng rng(c.seed);
    rng.fill_normal(w_.ptr(), w_.size(), 0.05);
  }
  std::string device() const override { return "sgd test engine"; }
  void set_learning_rate(double lr) override { lr_ = lr; }
  bool reports_batch_loss() const override { return options_.reports_loss; }

  EpochStats train_epoch(const Dataset& train, int epoch, const BatchCallback& on_batch) override {
    const Batcher batcher(train, c_.batch, c_.seed, epoch);
    const long D = train.shape.size();
    std::vector<float> x(static_cast<std::size_t>(c_.batch * D)), gw(static_cast<std::size_t>(D));
    std::vector<float> gb(static_cast<std::size_t>(c_.classes));
    std::vector<int> y(static_cast<std::size_t>(c_.batch));
    const auto m = static_cast<float>(c_.momentum);
    EpochStats s;
    for (int b = 0; b < batcher.num_batches(); ++b) {
      const auto lr = static_cast<float>(lr_);  // the trainer may set another between two steps
      const int B = batcher.gather(b, x.data(), y.data());
      std::fill(gw.begin(), gw.end(), 0.0f);
      std::fill(gb.begin(), gb.end(), 0.0f);
      double loss = 0;
      for (int n = 0; n < B; ++n) {
        const float* xn = x.data() + n * D;
        float score = b_[static_cast<std::size_t>(y[n])];
        for (long j = 0; j < D; ++j) score += w_[static_cast<std::size_t>(j)] * xn[j];
        const float err = score - 0.1f * static_cast<float>(y[n]);
        loss += static_cast<double>(err) * err;
        s.correct += err * err < 0.01f;
        for (long j = 0; j < D; ++j) gw[static_cast<std::size_t>(j)] += err * xn[j] / static_cast<float>(B);
        gb[static_cast<std::size_t>(y[n])] += err / static_cast<float>(B);
      }
      for (std::size_t j = 0; j < gw.size(); ++j) {
        vw_[j] = m * vw_[j] + gw[j];
        w_[j] -= lr * vw_[j];
      }
      for (std::size_t k = 0; k < gb.size(); ++k) {
        vb_[k] = m * vb_[k] + gb[k];
        b_[k] -= lr * vb_[k];
      }
      s.loss_sum += loss;
      s.seen += B;
      if (++steps_ == options_.signal_at_step) std::raise(options_.signal);  // Ctrl-C during this step
      if (on_batch) on_batch(s.seen, options_.reports_loss ? s.loss_sum : std::nan(""));
    }
    return s;
  }

  EpochStats evaluate(const Dataset& data, std::vector<int>* predictions) override {
    EpochStats s;
    if (predictions) predictions->assign(static_cast<std::size_t>(data.size()), 0);
    s.seen = data.size();
    return s;
  }

  std::vector<NamedTensor> get_parameters() override { return {{"w", w_}, {"b", b_}}; }
  void set_parameters(const std::vector<NamedTensor>& p) override {
    w_ = p.at(0).tensor;
    b_ = p.at(1).tensor;
  }
  std::vector<NamedTensor> get_optimizer_state() override {
    if (!options_.can_checkpoint) return Engine::get_optimizer_state();  // throws CheckpointNotSupported
    return {{"w.velocity", vw_}, {"b.velocity", vb_}};
  }
  void set_optimizer_state(const std::vector<NamedTensor>& state) override {
    if (!options_.can_checkpoint) Engine::set_optimizer_state(state);
    vw_ = state.at(0).tensor;
    vb_ = state.at(1).tensor;
  }

 private:
  EngineConfig c_;
  SgdOptions options_;
  double lr_ = c_.lr;  // the rate of the next step (the trainer's schedule and warm-up set it)
  Tensor w_, b_, vw_, vb_;
  long steps_ = 0;
};

EngineFactory sgd_factory(SgdOptions options = {}) {
  return [options](const EngineConfig& c) -> std::unique_ptr<Engine> { return std::make_unique<SgdEngine>(c, options); };
}

using trainer_run::RunResult;
using trainer_run::same_bits;

using trainer_run::run_as_stage01;

// 200 synthetic examples in batches of 32: 7 steps per epoch, the last one of 8 examples.
std::vector<std::string> checkpoint_args(int epochs, std::vector<std::string> more = {}) {
  std::vector<std::string> args = {"--dataset", "synthetic", "--limit",    "200", "--batch",
                                   "32",        "--lr",      "0.05",       "--momentum", "0.9",
                                   "--epochs",  std::to_string(epochs), "--no-progress"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

fs::path checkpoint_dir() { return trainer_process::fresh_dir("course_checkpoint"); }

using testkit::small_checkpoint;

void expect_same(const Checkpoint& a, const Checkpoint& b) {
  EXPECT_EQ(a.model.arch, b.model.arch);
  EXPECT_EQ(a.model.input, b.model.input);
  EXPECT_EQ(a.model.classes, b.model.classes);
  EXPECT_EQ(a.model.stage, b.model.stage);
  EXPECT_TRUE(same_bits(a.model.tensors, b.model.tensors));
  EXPECT_TRUE(same_bits(a.optimizer, b.optimizer));
  EXPECT_EQ(a.epoch, b.epoch);
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.examples_done, b.examples_done);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.batch, b.batch);
  EXPECT_EQ(a.lr, b.lr);
  EXPECT_EQ(a.lr_schedule, b.lr_schedule);
  EXPECT_EQ(a.lr_scaling, b.lr_scaling);
  EXPECT_EQ(a.lr_reference_batch, b.lr_reference_batch);
  EXPECT_EQ(a.warmup_steps, b.warmup_steps);
  EXPECT_EQ(a.epochs, b.epochs);
  EXPECT_EQ(a.momentum, b.momentum);
  EXPECT_EQ(a.loss, b.loss);
  EXPECT_EQ(a.dataset, b.dataset);
  EXPECT_EQ(a.train_examples, b.train_examples);
  EXPECT_EQ(a.labels_hash, b.labels_hash);
  EXPECT_EQ(nlohmann::json::parse(a.history), nlohmann::json::parse(b.history));
}

// ---- the file format ----------------------------------------------------------------

TEST(CheckpointFile, RoundTripIsBitExact) {
  const Checkpoint c = small_checkpoint();
  expect_same(decode_checkpoint(encode_checkpoint(c), "mem"), c);
  const fs::path path = checkpoint_dir() / "run.ckpt";
  save_checkpoint(path.string(), c);
  expect_same(load_checkpoint(path.string()), c);
  EXPECT_FALSE(fs::exists(path.string() + ".tmp"));
}

TEST(CheckpointFile, EveryCutIsRefusedWithAMessage) {
  const std::string bytes = encode_checkpoint(small_checkpoint());
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    try {
      decode_checkpoint(bytes.substr(0, n), "cut.ckpt");
      ADD_FAILURE() << "a checkpoint cut to " << n << " of " << bytes.size() << " bytes was accepted";
    } catch (const CheckpointError& e) {
      ASSERT_NE(std::string(e.what()).find("checkpoint 'cut.ckpt' "), std::string::npos) << e.what();
    }
  }
  RecordProperty("files_tried", static_cast<int>(bytes.size()));
}

TEST(CheckpointFile, EveryFlippedByteIsRefused) {
  const std::string bytes = encode_checkpoint(small_checkpoint());
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    std::string damaged = bytes;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x20);
    EXPECT_THROW(decode_checkpoint(damaged, "flipped.ckpt"), CheckpointError) << "byte " << i << " flipped";
  }
  RecordProperty("files_tried", static_cast<int>(bytes.size()));
}

TEST(CheckpointFile, AModelFileIsNamedAsSuch) {
  const std::string model = encode_model(small_checkpoint().model);
  try {
    decode_checkpoint(model, "model.bin");
    FAIL() << "a model file was read as a checkpoint";
  } catch (const CheckpointError& e) {
    EXPECT_CONTAINS(e.what(), "it is a model file: pass it to --load, not --resume");
  }
}

TEST(CheckpointFile, MissingFileNamesIt) {
  const std::string path = (checkpoint_dir() / "missing.ckpt").string();
  try {
    load_checkpoint(path);
    FAIL();
  } catch (const CheckpointError& e) {
    EXPECT_CONTAINS(e.what(), path);
  }
}

// A checkpoint write that fails part way (a full disk, a crash) must leave the
// previous checkpoint whole and loadable: tried at every byte of the new file.
TEST(CheckpointFile, WriteInterruptedAtEveryByteKeepsThePreviousCheckpoint) {
  const fs::path path = checkpoint_dir() / "run.ckpt";
  const Checkpoint first = small_checkpoint();
  save_checkpoint(path.string(), first);
  Checkpoint second = small_checkpoint();
  second.epoch = 4;
  second.model.tensors[1].tensor[0] = 7.0f;
  const std::size_t size = encode_checkpoint(second).size();
  int faults = 0;
  for (std::size_t cut = 0; cut < size; ++cut) {
    EXPECT_THROW(save_checkpoint(path.string(), second, cut), CheckpointError);
    ++faults;
    ASSERT_FALSE(fs::exists(path.string() + ".tmp")) << "cut at " << cut;
  }
  expect_same(load_checkpoint(path.string()), first);
  save_checkpoint(path.string(), second);
  expect_same(load_checkpoint(path.string()), second);
  RecordProperty("faults_injected", faults);
}

TEST(CheckpointFile, OutOfRangeFieldsAreRefused) {
  Checkpoint c = small_checkpoint();
  c.examples_done = c.train_examples;  // a mid-epoch point is never the end of the epoch
  EXPECT_THROW(decode_checkpoint(encode_checkpoint(c), "m"), CheckpointError);
  c = small_checkpoint();
  c.history = R"([{"epoch":[[[1]]]}])";
  EXPECT_THROW(decode_checkpoint(encode_checkpoint(c), "m"), CheckpointError);
}

// ---- the examples an interrupted epoch has left ------------------------------------

TEST(RemainingExamples, VisitsTheRestOfTheEpochInItsOrder) {
  const Dataset train = make_synthetic(203, Shape3{1, 3, 2}, 10, 5);
  const int batch = 16;
  const std::uint64_t seed = 77;
  for (long done : {0L, 16L, 64L, 192L}) {
    const Dataset rest = remaining_examples(train, seed, 4, done);
    ASSERT_EQ(rest.size(), train.size() - done);
    const Batcher whole(train, batch, seed, 4), tail(rest, batch, seed, 4);
    const long D = train.shape.size();
    std::vector<float> xa(static_cast<std::size_t>(batch * D)), xb(xa.size());
    std::vector<int> ya(static_cast<std::size_t>(batch)), yb(ya.size());
    const int skipped = static_cast<int>(done / batch);
    ASSERT_EQ(tail.num_batches(), whole.num_batches() - skipped);
    for (int b = 0; b < tail.num_batches(); ++b) {
      const int na = whole.gather(b + skipped, xa.data(), ya.data()), nb = tail.gather(b, xb.data(), yb.data());
      ASSERT_EQ(na, nb);
      EXPECT_EQ(std::vector<int>(ya.begin(), ya.begin() + na), std::vector<int>(yb.begin(), yb.begin() + nb));
      EXPECT_EQ(0, std::memcmp(xa.data(), xb.data(), static_cast<std::size_t>(na * D) * sizeof(float)))
          << "batch " << b << " after " << done << " examples";
    }
  }
  EXPECT_THROW(remaining_examples(train, seed, 0, 204), std::invalid_argument);
}

// ---- the trainer: resume, Ctrl-C, divergence -----------------------------------------

// Trains `epochs` epochs without a stop; returns the parameters and velocities at the end.
Checkpoint uninterrupted(const fs::path& dir, int epochs, std::vector<std::string> more = {}) {
  const std::string path = (dir / ("uninterrupted_" + std::to_string(epochs) + ".ckpt")).string();
  more.insert(more.end(), {"--checkpoint-every", std::to_string(epochs), "--checkpoint", path});
  const RunResult r = run_as_stage01(checkpoint_args(epochs, more), sgd_factory());
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  return load_checkpoint(path);
}

// Train `stop` epochs, then resume up to 4: with a constant rate, what an
// epoch does does not depend on --epochs, so this equals 4 epochs in one go.
TEST(TrainerResume, ResumedAtEveryEpochEqualsUninterrupted) {
  const fs::path dir = checkpoint_dir();
  const std::vector<std::string> constant = {"--lr-schedule", "constant"};
  const Checkpoint want = uninterrupted(dir, 4, constant);
  for (int stop = 1; stop < 4; ++stop) {
    const std::string path = (dir / ("after_" + std::to_string(stop) + ".ckpt")).string();
    ASSERT_EQ(run_as_stage01(checkpoint_args(stop, {"--checkpoint-every", "1", "--checkpoint", path, "--lr-schedule", "constant"}),
                  sgd_factory())
                  .code,
              0);
    EXPECT_EQ(load_checkpoint(path).epoch, stop);
    const RunResult r =
        run_as_stage01(checkpoint_args(4, {"--resume", path, "--checkpoint-every", "4", "--lr-schedule", "constant"}), sgd_factory());
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_CONTAINS(r.out, "resumed " + path + " after epoch " + std::to_string(stop));
    EXPECT_EQ(r.out.find("epoch " + std::to_string(stop) + "/4"), std::string::npos) << "done epochs are not redone";
    EXPECT_CONTAINS(r.out, "epoch 4/4");
    EXPECT_EQ(r.err, "") << "the same settings: nothing to warn about";
    const Checkpoint got = load_checkpoint(path);  // --resume writes to the file it continues
    EXPECT_EQ(got.epoch, 4);
    EXPECT_TRUE(same_bits(got.model.tensors, want.model.tensors)) << "resumed after epoch " << stop;
    EXPECT_TRUE(same_bits(got.optimizer, want.optimizer)) << "resumed after epoch " << stop;
  }
}

// Ctrl-C during every step of epochs 1 and 2: the run stops after that step,
// saves a checkpoint, exits with 130, and the resumed run ends bit for bit
// where the uninterrupted one does.
TEST(TrainerResume, CtrlCAtEveryStepThenResumeEqualsUninterrupted) {
  const fs::path dir = checkpoint_dir();
  const Checkpoint want = uninterrupted(dir, 3);
  for (long at = 1; at <= 14; ++at) {
    SCOPED_TRACE("Ctrl-C during step " + std::to_string(at) + " of the run (7 steps per epoch)");
    const std::string path = (dir / "stopped.ckpt").string(), json_path = (dir / "stopped.json").string();
    fs::remove(path);
    const RunResult r = run_as_stage01(checkpoint_args(3, {"--checkpoint", path, "--json", json_path}), sgd_factory(interrupted_at(at)));
    ASSERT_EQ(r.code, kExitInterrupted) << r.out << r.err;
    EXPECT_CONTAINS(r.err, "press Ctrl-C again to quit at once");
    const int epoch = static_cast<int>((at - 1) / 7) + 1, step = static_cast<int>((at - 1) % 7) + 1;
    if (step < 7) {
      EXPECT_CONTAINS(r.err, "stopped by Ctrl-C after step " + std::to_string(step) + " of 7 in epoch " +
                                 std::to_string(epoch) + "; saved the checkpoint " + path);
    } else {
      EXPECT_CONTAINS(r.err, "stopped by Ctrl-C after epoch " + std::to_string(epoch) + "; saved the checkpoint");
    }
    EXPECT_CONTAINS(r.err, "continue with: s01_train ");
    EXPECT_CONTAINS(r.err, " --resume " + path);
    std::ifstream json_in(json_path);
    const nlohmann::json j = nlohmann::json::parse(json_in);
    EXPECT_EQ(j["status"], "interrupted");
    EXPECT_EQ(j["checkpoint"], path);

    const Checkpoint saved = load_checkpoint(path);
    EXPECT_EQ(saved.epoch, step < 7 ? epoch - 1 : epoch);
    EXPECT_EQ(saved.step, step < 7 ? step : 0);
    EXPECT_EQ(saved.examples_done, step < 7 ? 32L * step : 0L);

    const RunResult resumed = run_as_stage01(checkpoint_args(3, {"--resume", path, "--checkpoint-every", "3", "--json", json_path}),
                                  sgd_factory());
    ASSERT_EQ(resumed.code, 0) << resumed.out << resumed.err;
    if (step < 7) {
      EXPECT_CONTAINS(resumed.out, "(resumed after step " + std::to_string(step));
    }
    const Checkpoint got = load_checkpoint(path);
    EXPECT_TRUE(same_bits(got.model.tensors, want.model.tensors));
    EXPECT_TRUE(same_bits(got.optimizer, want.optimizer));
    // The JSON of the resumed run lists every epoch, those before the stop included.
    std::ifstream again(json_path);
    const nlohmann::json k = nlohmann::json::parse(again);
    ASSERT_EQ(k["epochs"].size(), 3u);
    for (std::size_t e = 0; e < 3; ++e) EXPECT_EQ(k["epochs"][e]["epoch"], e + 1);
    EXPECT_EQ(k["status"], "ok");
  }
}

// A stop inside the warm-up: the resumed run takes up each step's rate where it stopped.
TEST(TrainerResume, CtrlCDuringAWarmUpThenResumeEqualsUninterrupted) {
  const fs::path dir = checkpoint_dir();
  const std::vector<std::string> rule = {"--lr-scaling", "linear", "--lr-reference-batch", "64", "--warmup-steps", "10"};
  const Checkpoint plain = uninterrupted(dir, 2);
  const Checkpoint want = uninterrupted(dir, 2, rule);  // the same file, written again with the rule
  EXPECT_FALSE(same_bits(want.model.tensors, plain.model.tensors)) << "the rule changed nothing";
  for (const long at : {3L, 8L}) {  // in the first epoch, and in the second (7 steps an epoch)
    SCOPED_TRACE("Ctrl-C during step " + std::to_string(at));
    const std::string path = (dir / "warm.ckpt").string();
    fs::remove(path);
    std::vector<std::string> stop = rule;
    stop.insert(stop.end(), {"--checkpoint", path});
    ASSERT_EQ(run_as_stage01(checkpoint_args(2, stop), sgd_factory(interrupted_at(at))).code, kExitInterrupted);
    std::vector<std::string> resume = rule;
    resume.insert(resume.end(), {"--resume", path, "--checkpoint-every", "2"});
    const RunResult resumed = run_as_stage01(checkpoint_args(2, resume), sgd_factory());
    ASSERT_EQ(resumed.code, 0) << resumed.out << resumed.err;
    EXPECT_EQ(resumed.err.find("warning"), std::string::npos) << resumed.err;
    EXPECT_TRUE(same_bits(load_checkpoint(path).model.tensors, want.model.tensors));
  }
  // Resumed without the rule: warned, flag by flag.
  const std::string path = (dir / "warm.ckpt").string();
  const RunResult other = run_as_stage01(checkpoint_args(2, {"--resume", path}), sgd_factory());
  EXPECT_CONTAINS(other.err, "--lr-scaling none differs from the checkpoint's linear");
  EXPECT_CONTAINS(other.err, "--warmup-steps 0 differs from the checkpoint's 10");
}

TEST(TrainerResume, SigtermStopsLikeCtrlC) {
  const fs::path dir = checkpoint_dir();
  const std::string path = (dir / "term.ckpt").string();
  const RunResult r = run_as_stage01(checkpoint_args(2, {"--checkpoint", path}), sgd_factory(interrupted_at(3, SIGTERM)));
  EXPECT_EQ(r.code, kExitInterrupted);
  EXPECT_CONTAINS(r.err, "stopped by SIGTERM after step 3 of 7 in epoch 1");
  EXPECT_TRUE(fs::exists(path));
}

TEST(TrainerResume, CtrlCOnAStageThatCannotCheckpointSavesNothing) {
  const fs::path dir = checkpoint_dir();
  const std::string path = (dir / "none.ckpt").string();
  SgdOptions stop = interrupted_at(2);
  stop.can_checkpoint = false;
  const RunResult r = run_as_stage01(checkpoint_args(2, {"--checkpoint", path}), sgd_factory(stop));
  EXPECT_EQ(r.code, kExitInterrupted);
  EXPECT_CONTAINS(r.err, "stopped by Ctrl-C after step 2 of 7 in epoch 1; nothing was saved: this stage cannot checkpoint");
  EXPECT_FALSE(fs::exists(path));
}

TEST(TrainerResume, CheckpointFlagsOnAStageThatCannotCheckpointAreUsageErrors) {
  SgdOptions none;
  none.can_checkpoint = false;
  RunResult r = run_as_stage01(checkpoint_args(2, {"--checkpoint-every", "1"}), sgd_factory(none));
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_CONTAINS(r.err, "--checkpoint-every: stage 01_fc_softmax cannot checkpoint");
  const fs::path dir = checkpoint_dir();
  const std::string path = (dir / "a.ckpt").string();
  ASSERT_EQ(run_as_stage01(checkpoint_args(1, {"--checkpoint-every", "1", "--checkpoint", path}), sgd_factory()).code, 0);
  r = run_as_stage01(checkpoint_args(2, {"--resume", path}), sgd_factory(none));
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_CONTAINS(r.err, "--resume: stage 01_fc_softmax cannot checkpoint");
}

TEST(TrainerResume, OtherDataIsRefusedAndOtherSettingsWarned) {
  const fs::path dir = checkpoint_dir();
  const std::string path = (dir / "a.ckpt").string();
  ASSERT_EQ(run_as_stage01(checkpoint_args(1, {"--checkpoint-every", "1", "--checkpoint", path}), sgd_factory()).code, 0);
  RunResult r = run_as_stage01(checkpoint_args(2, {"--resume", path, "--limit", "300"}), sgd_factory());
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_CONTAINS(r.err, "continues a run on 200 training examples of synthetic, but this run has 300 of synthetic");
  // The synthetic set is drawn from --seed: another seed is other data.
  r = run_as_stage01(checkpoint_args(2, {"--resume", path, "--seed", "7"}), sgd_factory());
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_CONTAINS(r.err, "but this run has 200 of synthetic with other labels");
  r = run_as_stage01(checkpoint_args(2, {"--resume", path, "--lr", "0.01", "--batch", "50"}), sgd_factory());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_CONTAINS(r.err, "warning: --lr 0.01 differs from the checkpoint's 0.05: the resumed run will not match an "
                         "uninterrupted one");
  EXPECT_CONTAINS(r.err, "warning: --batch 50 differs from the checkpoint's 32");
  r = run_as_stage01(checkpoint_args(2, {"--resume", path, "--arch", "fc10"}), sgd_factory());
  EXPECT_EQ(r.code, kExitError);
  EXPECT_CONTAINS(r.err, "holds architecture 'fc256,relu,fc128,relu,fc10'");
}

// A schedule that decays over the run depends on --epochs: resuming with
// another --epochs (or schedule) trains on, with a warning that the result
// will differ from the run first started.
TEST(TrainerResume, ScheduleOverOtherEpochsIsWarned) {
  const fs::path dir = checkpoint_dir();
  const std::string path = (dir / "a.ckpt").string();
  ASSERT_EQ(run_as_stage01(checkpoint_args(2, {"--checkpoint-every", "1", "--checkpoint", path, "--lr-schedule", "cosine"}),
                sgd_factory())
                .code,
            0);
  RunResult r = run_as_stage01(checkpoint_args(4, {"--resume", path, "--lr-schedule", "cosine"}), sgd_factory());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_CONTAINS(r.err, "warning: --epochs 4 differs from the checkpoint's 2 (the cosine schedule spans --epochs)");
  r = run_as_stage01(checkpoint_args(2, {"--resume", path, "--lr-schedule", "constant"}), sgd_factory());
  EXPECT_CONTAINS(r.err, "warning: --lr-schedule constant differs from the checkpoint's cosine");
}

TEST(TrainerResume, NothingLeftToTrain) {
  const fs::path dir = checkpoint_dir();
  const std::string path = (dir / "a.ckpt").string();
  ASSERT_EQ(run_as_stage01(checkpoint_args(2, {"--checkpoint-every", "2", "--checkpoint", path}), sgd_factory()).code, 0);
  const RunResult r = run_as_stage01(checkpoint_args(2, {"--resume", path}), sgd_factory());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "nothing left to train");
  EXPECT_CONTAINS(r.out, "final test accuracy");
}

TEST(TrainerResume, ResumeAndLoadTogetherAreAUsageError) {
  const RunResult r = run_as_stage01(checkpoint_args(1, {"--resume", "a.ckpt", "--load", "m.bin"}), sgd_factory());
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_CONTAINS(r.err, "--resume");
}

// A checkpoint that cannot be written (here: its folder does not exist) warns
// and training goes on; the run is not lost for the sake of its safety net.
TEST(TrainerResume, CheckpointThatCannotBeWrittenWarnsAndTrainingGoesOn) {
  const std::string path = (checkpoint_dir() / "no_such_folder" / "a.ckpt").string();
  const RunResult r = run_as_stage01(checkpoint_args(2, {"--checkpoint-every", "1", "--checkpoint", path}), sgd_factory());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_CONTAINS(r.err, "warning: checkpoint: cannot write '" + path + "'");
  EXPECT_CONTAINS(r.out, "epoch 2/2");
}

TEST(TrainerDivergence, HugeLearningRateStopsAtTheFirstBadStep) {
  const fs::path json_path = checkpoint_dir() / "run.json";
  const RunResult r =
      run_as_stage01(checkpoint_args(3, {"--lr", "1e6", "--json", json_path.string(), "--checkpoint-every", "1"}), sgd_factory());
  EXPECT_EQ(r.code, kExitDiverged) << r.out << r.err;
  EXPECT_CONTAINS(r.err, "at epoch 1, step ");
  EXPECT_CONTAINS(r.err, "of 7: the run diverged; try a smaller --lr, e.g. 0.02 (the default) (now 1e+06)");
  EXPECT_EQ(r.out.find("epoch 1/3"), std::string::npos) << "no epoch line for a diverged epoch";
  std::ifstream in(json_path);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["status"], "diverged");
  EXPECT_GE(j["epochs"].back()["step"].get<int>(), 1);
}

TEST(TrainerDivergence, EngineWithoutBatchLossIsCheckedAtTheEpochEnd) {
  SgdOptions quiet;
  quiet.reports_loss = false;
  const RunResult r = run_as_stage01(checkpoint_args(3, {"--lr", "1e6"}), sgd_factory(quiet));
  EXPECT_EQ(r.code, kExitDiverged);
  EXPECT_CONTAINS(r.err, "at epoch 1 (this stage reports its loss once per epoch, so the first bad step is not known)");
  EXPECT_CONTAINS(r.err, "try a smaller --lr");
}

}  // namespace
}  // namespace course
