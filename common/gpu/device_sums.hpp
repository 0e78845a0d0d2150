/// @file device_sums.hpp
/// @brief An epoch's sums on the device, and the running loss read back a few steps late: the NaN check (given code).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "common/gpu/cuda_check.hpp"
#include "common/data/data.hpp"
#include "common/train/engine.hpp"
#include "common/train/loss_check.hpp"

namespace course {

/// The slots of common/train/loss_check.hpp on a GPU: slot i is one double of pinned
/// host memory, mapped into the device's address space, where the end of training step s
/// writes the running loss sum when s % count() == i (end_training_step_gpu, device_epoch.hpp:
/// a cudaMemcpyAsync would cost a step three times as long), and an event recorded on the
/// stream right after that step.
class DeviceLossSlots {
 public:
  /// `count` slots for copies of a running loss sum, written by the steps queued on `stream`.
  DeviceLossSlots(cudaStream_t stream, int count);
  /// Waits for the copies still on their way (a stop may leave some), then frees the slots.
  ~DeviceLossSlots();
  DeviceLossSlots(const DeviceLossSlots&) = delete;
  DeviceLossSlots& operator=(const DeviceLossSlots&) = delete;

  /// Records `slot`'s event after the step just queued, which has written its copy into the slot
  /// (every training step ends so, with `slot` its index in the epoch modulo count()).
  void record(int slot);
  /// The slots as the device addresses them (pinned host memory mapped into the device).
  double* device_slots() const { return device_; }
  /// Waits for the copy into `slot` (for the GPU to reach it) and returns it.
  double wait(int slot);
  int count() const { return static_cast<int>(events_.size()); }
  cudaStream_t stream() const { return stream_; }

 private:
  void release();

  cudaStream_t stream_;
  double* host_ = nullptr;            ///< [count], pinned and mapped
  double* device_ = nullptr;          ///< host_ as the device addresses it
  std::vector<cudaEvent_t> events_;   ///< [count]
};

/// An epoch's loss sum and correct count (and, with --loss mse, its summed absolute
/// errors: EpochStats::abs_error_sum), on the device, where the loss kernels add to them.
/// Empty until allocate(): an engine allocates after its checks that need no GPU.
struct DeviceSums {
  DeviceBuffer<double> loss_sum;
  DeviceBuffer<unsigned long long> correct;
  DeviceBuffer<double> abs_error_sum;

  void allocate();
  /// All three back to 0, queued on `stream`.
  void zero(cudaStream_t stream = 0);
  /// All three copied to the host after the work queued on `stream` (this waits for it: the one
  /// wait of an epoch), as the stats of `seen` examples.
  EpochStats read(long seen, cudaStream_t stream = 0) const;
  /// The slots train_epoch_in_batches reads loss_sum back through, `count` of them on `stream`:
  /// made with the first epoch and kept for the next (pinned memory takes about a millisecond
  /// to allocate and as long to free, and freeing it waits for the whole device).
  DeviceLossSlots& loss_slots(cudaStream_t stream, int count);

 private:
  std::unique_ptr<DeviceLossSlots> slots_;
};

/// One epoch of a GPU engine: engine.begin_epoch(train, epoch), engine.train_batch(b) for
/// every batch, engine.end_epoch(). Every GPU engine trains this way; only the steps differ.
///
/// `sums` are the DeviceSums the engine's training steps add to, on `stream`. `on_batch`
/// gets NaN for the loss, which stays on the device; instead, after each step, a copy of
/// the running loss sum is queued (DeviceLossSlots), and the copy of the step kLossCheckLag back is read
/// (course::train_steps_checked, common/train/loss_check.hpp). When one is NaN or Inf, this
/// throws course::NonFiniteLoss naming that step: the run stops at most kLossCheckLag
/// steps later, with no synchronisation per step. When `on_batch` throws (a stop:
/// Ctrl-C), the steps queued so far are checked first, and a bad one turns the stop
/// into NonFiniteLoss.
template <typename GpuEngine>
EpochStats train_epoch_in_batches(GpuEngine& engine, const Dataset& train, int epoch, int batch,
                                  const BatchCallback& on_batch, DeviceSums& sums, cudaStream_t stream = 0) {
  engine.begin_epoch(train, epoch);
  DeviceLossSlots& slots = sums.loss_slots(stream, kLossCheckLag + 1);
  train_steps_checked(engine.num_batches(), batch, train.size(), slots, kLossCheckLag,
                      [&](int b) { engine.train_batch(b); }, on_batch);
  return engine.end_epoch();
}

}  // namespace course
