/// @file loss_check.hpp
/// @brief A diverged loss found on a device without waiting for every step: the running loss sum read back a few steps late.
///
/// A GPU engine queues its steps and lets the GPU run behind the host. Waiting
/// for each step's loss before queuing the next would idle the GPU while the
/// host prepares every step, so the GPU engines keep the loss on the device:
/// the loss kernels add every example's loss into one running sum there
/// (stage 04's DeviceSums). That sum is the flag this check needs. A sum is NaN
/// or Inf as soon as one of its terms is (NaN + x = NaN, Inf + finite = Inf,
/// Inf - Inf = NaN), and it stays so: the running sum after step s is finite
/// exactly when every loss up to step s was.
///
/// So after queuing step s the engine also queues a copy of the running sum
/// into slot s of a small ring of host memory, and reads that slot `lag`
/// steps later, once step s + lag is queued, waiting for the copy if the GPU
/// has not got there yet. The steps are read in order, so the first slot that
/// is not finite names the first step whose loss was NaN or Inf, and the
/// engine has queued `lag` steps more (fewer at the end of an epoch). The host
/// waits only when it is more than `lag` steps ahead of the GPU, and then the
/// GPU still has `lag` steps of work queued: it never runs dry, and there is
/// no synchronisation per step.
///
/// This class is that bookkeeping, without CUDA. `Slots` holds the copies:
///
/// | member                   | does                                                      |
/// |--------------------------|-----------------------------------------------------------|
/// | `void record(int slot)`  | queues a copy of the running sum into `slot`              |
/// | `double wait(int slot)`  | waits for the copy into `slot` and returns its value      |
///
/// for slots 0 .. lag (lag + 1 of them: a slot is reused only after it was
/// checked). Stage 04's DeviceLossSlots keeps them in pinned host memory with a
/// CUDA event each; the tests of common/ use a vector.
#pragma once

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/train/engine.hpp"

namespace course {

/// Steps a GPU engine may have queued past the first one whose loss was NaN or
/// Inf before it stops: enough to keep the GPU busy while the host waits, few
/// enough that a diverged run stops at once.
inline constexpr int kLossCheckLag = 4;

/// The checks of one epoch's running loss sum, read back at most `lag` steps late.
template <typename Slots>
class DelayedLossCheck {
 public:
  /// Needs `slots` to hold lag + 1 slots. Throws std::invalid_argument for lag < 0.
  DelayedLossCheck(Slots& slots, int lag) : slots_(slots), lag_(lag) {
    if (lag < 0) throw std::invalid_argument("DelayedLossCheck: lag must be >= 0, got " + std::to_string(lag));
    examples_.assign(static_cast<std::size_t>(lag) + 1, 0);
  }

  /// Step queued() + 1 was just queued, and with it `examples_done` examples of
  /// the epoch are done. Records a copy of the running sum after it, then
  /// checks the step `lag` before it (waiting for its copy if needed). Throws
  /// NonFiniteLoss when that step's running sum is NaN or Inf: the steps are
  /// checked in order, so it is the first bad one.
  void after_step(long examples_done) {
    const int slot = queued_ % slot_count();
    slots_.record(slot);
    examples_[static_cast<std::size_t>(slot)] = examples_done;
    ++queued_;
    while (queued_ - checked_ > lag_) check_next();
  }

  /// Checks every step queued and not checked yet, waiting for their copies:
  /// at the end of an epoch, or before a stop lets a checkpoint be saved.
  /// Throws NonFiniteLoss like after_step().
  void finish() {
    while (checked_ < queued_) check_next();
  }

  int queued() const { return queued_; }   ///< steps recorded
  int checked() const { return checked_; } ///< steps found finite so far (the first `checked` ones)
  int lag() const { return lag_; }

 private:
  int slot_count() const { return lag_ + 1; }

  void check_next() {
    const int slot = checked_ % slot_count();
    const double sum = slots_.wait(slot);
    if (!std::isfinite(sum))
      throw NonFiniteLoss(checked_ + 1, examples_[static_cast<std::size_t>(slot)], sum, queued_);
    ++checked_;
  }

  Slots& slots_;
  int lag_;
  int queued_ = 0;
  int checked_ = 0;
  std::vector<long> examples_;  ///< per slot: examples done after the step recorded there
};

/// One epoch of `steps` training steps of `batch` examples (the last one may
/// be smaller: `examples` in all), each checked `lag` steps late: for every
/// step s, train_step(s) (which queues the step), a DelayedLossCheck on
/// `slots` (lag + 1 of them), then on_batch(examples done, NaN). The loss is
/// not known on the host, hence NaN for the BatchCallback.
///
/// Throws NonFiniteLoss for the first step whose running loss sum is NaN or
/// Inf, at most `lag` steps after it, or at the end. When on_batch throws (the
/// trainer stops the epoch: Ctrl-C), every step queued so far is checked
/// first, and a bad one turns the stop into NonFiniteLoss: a stopped run must
/// not save a checkpoint of a diverged model as if it were fine.
template <typename Slots, typename TrainStep>
void train_steps_checked(int steps, int batch, long examples, Slots& slots, int lag, TrainStep&& train_step,
                         const BatchCallback& on_batch) {
  DelayedLossCheck<Slots> check(slots, lag);
  for (int s = 0; s < steps; ++s) {
    train_step(s);
    const long done = std::min(static_cast<long>(s + 1) * batch, examples);
    check.after_step(done);
    if (!on_batch) continue;
    try {
      on_batch(done, std::nan(""));
    } catch (...) {
      check.finish();
      throw;
    }
  }
  check.finish();
}

}  // namespace course
