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

/// *to = *from on `stream`, by one thread: `to` is pinned host memory mapped into the device (loss_slots.cu).
void copy_running_loss_gpu(const double* from, double* to, cudaStream_t stream);

/// The slots of common/train/loss_check.hpp on a GPU: slot i is one double of pinned
/// host memory, mapped into the device's address space, where a one-thread kernel
/// writes the running loss sum (copy_running_loss_gpu, loss_slots.cu: a
/// cudaMemcpyAsync would cost a step three times as long), and an event recorded
/// on the stream right after that kernel.
class DeviceLossSlots {
 public:
  /// `count` slots for copies of `*loss_sum` (a DeviceSums' loss_sum), queued on `stream`.
  DeviceLossSlots(const double* loss_sum, cudaStream_t stream, int count);
  /// Waits for the copies still on their way (a stop may leave some), then frees the slots.
  ~DeviceLossSlots();
  DeviceLossSlots(const DeviceLossSlots&) = delete;
  DeviceLossSlots& operator=(const DeviceLossSlots&) = delete;

  /// Queues, after the work queued so far on the stream, a copy of the running sum into `slot`.
  /// With copied_by_the_step(true), only the slot's event: the step has written the copy itself.
  void record(int slot);
  /// true: from now on each training step writes its own copy, from a kernel it runs anyway (a fused
  /// update, say), into device_slots()[step % count()], with `step` the step's
  /// index in its epoch, which is `slot` of record(): no kernel of its own after each step.
  void copied_by_the_step(bool yes) { copied_by_the_step_ = yes; }
  /// The slots as the device addresses them (pinned host memory mapped into the device).
  double* device_slots() const { return device_; }
  /// Waits for the copy into `slot` (for the GPU to reach it) and returns it.
  double wait(int slot);
  int count() const { return static_cast<int>(events_.size()); }
  cudaStream_t stream() const { return stream_; }

 private:
  void release();

  const double* loss_sum_;
  cudaStream_t stream_;
  double* host_ = nullptr;            ///< [count], pinned and mapped
  double* device_ = nullptr;          ///< host_ as the device addresses it
  std::vector<cudaEvent_t> events_;   ///< [count]
  bool copied_by_the_step_ = false;
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
