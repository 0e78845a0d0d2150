/// @file engine.hpp
/// @brief What a stage plugs into the shared trainer (common/train/trainer.hpp).
///
/// The trainer owns everything a person sees (command line, data, progress
/// bar, tables, JSON, model files); a stage's Engine owns the numbers: it
/// trains one epoch and evaluates, on its own device, with its own lesson code.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/model/arch.hpp"
#include "common/data/data.hpp"
#include "common/core/tensor.hpp"

namespace course {

/// Sums over the examples seen: mean loss is loss_sum / seen.
struct EpochStats {
  double loss_sum = 0.0;
  long correct = 0;
  long seen = 0;
  /// With --loss mse, in an engine whose Engine::reports_mae() is true: the sum over
  /// the examples of each one's mean absolute error over the K outputs (after the
  /// output activation, if any) against the one-hot target, mean_k |a_k - [k == y]|;
  /// the MAE is abs_error_sum / seen. 0 otherwise.
  double abs_error_sum = 0.0;
};

/// Time spent in one layer, summed over the calls since the last reset.
struct LayerTime {
  std::string layer;  ///< "conv1 (conv16k3p1)"
  double forward_ms = 0.0;
  double backward_ms = 0.0;
  long calls = 0;
};

/// Called after each training batch (after its SGD step) with the examples
/// done so far this epoch and their running loss sum. Engines that keep the
/// loss on a device pass NaN on every batch and say so with
/// Engine::reports_batch_loss() (false); such an engine checks the loss itself,
/// a few steps late, and throws NonFiniteLoss naming the first bad step (the
/// GPU engines do: stage 04's train_epoch_in_batches); the trainer also checks
/// the epoch's loss when the epoch ends. The trainer may throw from the
/// callback, to stop the epoch after this batch (Ctrl-C, a diverged loss): an
/// engine lets that exception pass and need not finish the epoch. An engine
/// that checks its loss late first finishes the checks of the steps it has
/// queued, and throws NonFiniteLoss instead when one of them was bad, so that
/// a stopped run never saves a checkpoint of a diverged model.
using BatchCallback = std::function<void(long examples_done, double loss_sum)>;

/// What Engine::train_epoch() throws when it finds that the loss of one of its
/// steps was NaN or Inf, for an engine that finds it late: a GPU engine keeps
/// the loss on the device and reads it back a few steps after queuing them
/// (common/train/loss_check.hpp), so when it finds the first bad step it has
/// already queued some more. Steps count from 1 within the Dataset that
/// train_epoch() was given.
class NonFiniteLoss : public std::runtime_error {
 public:
  NonFiniteLoss(int step, long examples_done, double loss_sum, int steps_queued)
      : std::runtime_error("the running loss sum is " + std::string(std::isnan(loss_sum) ? "NaN" : "Inf") +
                           " after step " + std::to_string(step)),
        step_(step), examples_done_(examples_done), loss_sum_(loss_sum), steps_queued_(steps_queued) {}
  /// The first step whose loss was NaN or Inf.
  int step() const { return step_; }
  /// Examples of the epoch trained up to and including that step.
  long examples_done() const { return examples_done_; }
  /// The running loss sum after that step: NaN or +-Inf.
  double loss_sum() const { return loss_sum_; }
  /// Steps the engine had queued when it found out (>= step()): where the run stopped.
  int steps_queued() const { return steps_queued_; }

 private:
  int step_;
  long examples_done_;
  double loss_sum_;
  int steps_queued_;
};

/// What an engine that cannot save or restore its optimizer state throws from
/// Engine::get_optimizer_state() and Engine::set_optimizer_state().
class CheckpointNotSupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Named records of choices an engine made that its arithmetic depends on and
/// that a run does not otherwise repeat (stage 06's conv algorithms, which it
/// measures: another run, timing under another load, may choose others). The
/// values are the engine's own text; a checkpoint keeps them (Checkpoint::engine_state).
using EngineState = std::map<std::string, std::string>;

/// Everything an engine needs to build its model.
struct EngineConfig {
  Arch arch;                 ///< parsed architecture
  Shape3 input;              ///< shape of one example
  int classes = 10;
  int batch = 64;
  double lr = 0.01;
  double momentum = 0.9;
  std::uint64_t seed = 42;
  std::string loss = "cross-entropy";  ///< or "mse" (the only loss for an arch with an output activation, course::check_output_activation)
  int threads = 1;           ///< CPU stages
  bool profile = false;      ///< time every layer (costs a little)
  bool verbose = false;
  /// The Engine::engine_state() of the checkpoint this run resumes (--resume), else
  /// empty: an engine takes the choices recorded there instead of making them
  /// again, where it still can (and says so where it cannot).
  EngineState engine_state;
};

/// A stage's training engine.
class Engine {
 public:
  virtual ~Engine() = default;
  /// "CPU, 1 thread", "NVIDIA H100 80GB HBM3"
  virtual std::string device() const = 0;
  /// One pass over `train` in the order of course::epoch_order(n, seed, epoch),
  /// in batches of EngineConfig::batch taken from the start of that order. A
  /// resumed run may pass a Dataset other than the one of the epoch before (the
  /// examples an interrupted epoch had left, laid out so that this order visits
  /// them as the interrupted epoch would have), so cache nothing by its address.
  virtual EpochStats train_epoch(const Dataset& train, int epoch, const BatchCallback& on_batch) = 0;
  /// Sets the learning rate of the SGD steps that follow. The trainer calls it
  /// before every epoch with the rate its schedule gives (--lr-schedule), and
  /// during a warm-up (--warmup-steps) from the BatchCallback, between two steps:
  /// an engine reads the rate at every step, not once an epoch.
  virtual void set_learning_rate(double lr) = 0;
  /// Pays the one-off costs of training on `train` before the first epoch's clock
  /// starts, so that every epoch's seconds measure the same thing: the steady step.
  /// A GPU engine uploads the set, prepares each batch size of an epoch (descriptors,
  /// algorithm search, autotuning), runs one uncounted pass of the step and captures
  /// it. Nothing that training computes changes: the parameters, the optimizer state
  /// and the epochs' order stay as they were. Returns what it did, for the trainer's
  /// "setup" line, or "" when there is nothing to pay (the default: the CPU engines,
  /// whose first epoch costs what every other one does).
  virtual std::string warm_up(const Dataset& train) {
    (void)train;
    return "";
  }
  /// Forward passes only; fills predictions (one class per example) when given.
  virtual EpochStats evaluate(const Dataset& data, std::vector<int>* predictions) = 0;
  /// Host copies of every parameter, in model order ("fc1.weight", "fc1.bias", ...).
  virtual std::vector<NamedTensor> get_parameters() = 0;
  /// Replaces every parameter (names and shapes must match get_parameters()).
  virtual void set_parameters(const std::vector<NamedTensor>& params) = 0;
  /// Per-layer times since the last reset (empty unless EngineConfig::profile).
  virtual std::vector<LayerTime> layer_times() const { return {}; }
  virtual void reset_layer_times() {}

  /// True when the loss_sum the engine passes to its BatchCallback is the real
  /// running sum; false (the default) when it passes NaN because the loss stays
  /// on the device. The trainer stops a diverged run at the first batch whose
  /// reported loss is NaN or Inf when this is true; otherwise at the
  /// NonFiniteLoss the engine throws (when it checks its loss itself), else
  /// when the epoch ends.
  virtual bool reports_batch_loss() const { return false; }
  /// True when train_epoch() and evaluate() fill EpochStats::abs_error_sum with
  /// --loss mse, so that the trainer shows the mean absolute error (MAE) beside
  /// the loss; false (the default) for an engine that does not compute it (stage
  /// 08's fused loss), whose runs show no MAE.
  virtual bool reports_mae() const { return false; }
  /// Why two runs of this engine with the same settings may not end with the
  /// same bits (e.g. "cuDNN may add with atomics: --conv-algos fastest"), or
  /// "" (the default) when they do. The trainer prints it with --resume and
  /// --checkpoint-every: a resumed run then matches an uninterrupted one only
  /// to rounding.
  virtual std::string nondeterminism() const { return ""; }
  /// What the engine chose for this GPU that an older or newer GPU would choose otherwise, one
  /// line each ("kernel 11 (TF32 mma.sync) needs ...: kernel 10 in FP32"); the trainer prints
  /// them under its first line. None by default, and none on a GPU that has every feature used.
  virtual std::vector<std::string> gpu_choices() const { return {}; }
  /// Host copies of everything besides the parameters that training changes
  /// and a resumed run needs to continue bit for bit: for SGD with momentum the
  /// velocity of every parameter, in model order ("fc1.weight.velocity", ...).
  /// A checkpoint (common/train/checkpoint.hpp) saves it next to the parameters. The
  /// data order needs no state: it is course::epoch_order(n, seed, epoch).
  /// The default throws CheckpointNotSupported: that stage cannot checkpoint.
  virtual std::vector<NamedTensor> get_optimizer_state() {
    throw CheckpointNotSupported("this stage cannot checkpoint: its engine does not expose its optimizer state");
  }
  /// Replaces the state get_optimizer_state() returns (same names and shapes).
  /// The default throws CheckpointNotSupported.
  virtual void set_optimizer_state(const std::vector<NamedTensor>& state) {
    (void)state;
    throw CheckpointNotSupported("this stage cannot checkpoint: its engine does not expose its optimizer state");
  }

  /// The choices this engine made that the numbers depend on, for a checkpoint
  /// (see EngineState), by record name; built into an engine of the resumed run
  /// through EngineConfig::engine_state. The default: none.
  virtual EngineState engine_state() const { return {}; }

  // ---- one process of several (stage 09 trains with one process per GPU) ----

  /// False on the processes of a multi-process run that do not speak for it
  /// (stage 09: every rank but rank 0). The trainer there writes no file: no
  /// model (--save), no checkpoint, no --json. It still trains, evaluates and
  /// stops at the same points as the others. The default: true.
  virtual bool writes_files() const { return true; }
  /// Whether the run stops here. The trainer asks after every step
  /// (`at_epoch_end` false) and after every epoch's evaluation (true), on every
  /// process, passing whether this process was asked to stop (Ctrl-C,
  /// SIGTERM). The default stops where it is asked. The processes of one run
  /// must all answer alike at the same point: stage 09 answers false within an
  /// epoch and, at its end, whether any rank was asked.
  virtual bool stop_requested(bool asked, bool at_epoch_end) {
    (void)at_epoch_end;
    return asked;
  }

  /// What this run's engine is made of, beyond what every engine reports: stage 05's
  /// GEMM kernel and im2col workspace, stage 07's kernel and precision of every product.
  /// The trainer writes it, as it is, under "stage_results" in the --json file once the run
  /// is over (so it may hold what the run learned, such as autotuned choices). The default
  /// (engine.cpp) is null: nothing to add.
  virtual nlohmann::json stage_results() const;
};

/// Builds a stage's engine; throws std::invalid_argument for a model the stage cannot run.
using EngineFactory = std::function<std::unique_ptr<Engine>(const EngineConfig&)>;

}  // namespace course
