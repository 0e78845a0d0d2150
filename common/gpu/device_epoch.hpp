/// @file device_epoch.hpp
/// @brief An epoch whose batches the device gathers itself, by a step counter on the device (given code).
#pragma once

#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "common/gpu/cuda_check.hpp"
#include "common/data/data.hpp"
#include "common/gpu/device_dataset.hpp"
#include "common/gpu/device_sums.hpp"

namespace course {

/// An epoch whose batches the device gathers itself: the training
/// set on the device (upload_once), the epoch's order of examples, and a step counter
/// on the device that the gather reads and the update advances. Nothing of a step then
/// depends on which batch it is, so one captured step (a CUDA graph) replays for all of
/// them. The counter only counts up, so the batches run in order: the host keeps which
/// one is next and refuses any other.
class DeviceEpoch {
 public:
  /// Allocates the step counter. Called where the engine allocates its device memory.
  void allocate();
  /// Starts an epoch of `train`'s examples in `order` (indices into `train`) on `stream`:
  /// uploads the set unless the device holds it already, then the order, and zeroes the
  /// step counter and `sums`. Throws std::invalid_argument, naming the set, for an index
  /// outside it, and what upload_once throws for examples of another shape than `input`.
  void begin(const Dataset& train, const std::vector<int>& order, Shape3 input, int classes, DeviceSums& sums,
             cudaStream_t stream);
  /// The number of examples of batch b, batches of `batch` (the last may be short). Throws
  /// std::logic_error, naming `caller`, before begin() and when b is not the next batch.
  int batch_size(int b, int batch, const std::string& caller) const;
  /// The batch begin() or batch_size() allowed is queued: the next one may come.
  void batch_queued() { ++next_; }
  /// Ends the epoch: data() may not be used until the next begin().
  void end() { data_ = nullptr; }

  bool started() const { return data_ != nullptr; }
  const DeviceDataset& data() const { return *data_; }  ///< the set on the device, between begin() and end()
  int size() const { return size_; }                    ///< examples of the epoch
  int next() const { return next_; }                    ///< the batch that comes next
  int num_batches(int batch) const { return (size_ + batch - 1) / batch; }
  const int* order() const { return order_.get(); }  ///< [size()], example indices into data()
  int* step() { return step_.get(); }                ///< [1], the steps queued so far this epoch

 private:
  DeviceDataset train_;
  const DeviceDataset* data_ = nullptr;
  int size_ = 0, next_ = 0;
  DeviceBuffer<int> order_, step_;
};

/// The batch gather of a step that follows the device's step counter. For r in [0, B):
/// x[r] = images[e] (D floats) and y[r] = labels[e], with e = order[*step * batch + r]:
/// the rows of batch *step of the epoch's order, read when the kernel runs, so a captured
/// step gathers the right batch on every replay (device_epoch.cu).
void gather_batch_at_device_step(const float* images, const int* labels, const int* order, const int* step,
                                 int batch, int B, long D, float* x, int* y, cudaStream_t stream);

/// The last node of a training step, one thread: slots[*step % count] = *loss_sum (when `slots` is not
/// null), then *step += 1. `slots` is pinned host memory mapped into the device (DeviceLossSlots), where
/// the host reads the running loss a few steps late for the NaN check (device_epoch.cu).
void end_training_step_gpu(int* step, const double* loss_sum, double* slots, int count, cudaStream_t stream);

}  // namespace course
