/// @file gpu_engine_parts.hpp
/// @brief Stage 04: what every GPU engine of the course needs besides its layers (glue, not a task).
///
/// Stages 04, 05 and 06 each train on the GPU with their own layers, and
/// share these pieces:
///
/// - DeviceDataset and upload_once(): a data set copied to the device once per
///   run, recognised again by a fingerprint, its labels checked first;
/// - ParamLayout: the parameters' names and shapes in model order, between the
///   named tensors of the Engine interface and one flat device buffer;
/// - GpuProfiler: --profile's CUDA events around each layer's work, summed per
///   layer and pass;
/// - DeviceSums: the loss sum, correct count (and MAE numerator) an epoch keeps
///   on the device, copied to the host once;
/// - DeviceEpoch: an epoch whose batches the device gathers itself (stages 06
///   and 08): the data set, the epoch's order and a step counter on the device;
/// - DeviceLossSlots: the running loss sum copied back a few steps late, so
///   that a NaN or Inf loss stops the run at once (common/loss_check.hpp);
/// - train_epoch_in_batches(): train_epoch() as begin, every batch with its
///   loss check, end;
/// - GradientRange and GradientSync: where stage 09's data parallelism hooks
///   its all-reduce into an engine's step.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "common/cuda_check.hpp"
#include "common/data.hpp"
#include "common/engine.hpp"
#include "common/loss_check.hpp"
#include "common/tensor.hpp"

namespace course {

/// A data set copied to the device, and what identifies the copy.
struct DeviceDataset {
  std::uint64_t fingerprint = 0;
  int size = -1;               ///< examples held; -1: none yet (or an upload failed)
  DeviceBuffer<float> images;  ///< [size, D]
  DeviceBuffer<int> labels;    ///< [size]
};

/// Values a sampled image gives dataset_fingerprint: 16 floats, one 64-byte cache line.
inline constexpr long kFingerprintRun = 16;

/// A hash of the size, the shape, every label, the first and the last image whole, and
/// kFingerprintRun consecutive values of each of up to 4096 evenly spaced images (image s
/// from value s * kFingerprintRun on, wrapping): enough to tell one data set from another,
/// such as a resumed epoch's remaining examples from the full set. Every GPU epoch computes
/// it before its first step, so it reads little: for 60,000 images of 784 values, about 4,100
/// cache lines besides the labels (s04_bench's BM_DatasetFingerprint).
std::uint64_t dataset_fingerprint(const Dataset& d);

/// `slot`, holding `data`: uploaded unless `slot` holds it already (same size and
/// fingerprint). Waits for `stream` first, since queued work may still read the old copy.
/// Throws std::invalid_argument, before touching the device, for examples of another size
/// than `input`, an image buffer of the wrong length or a label outside [0, classes).
const DeviceDataset& upload_once(const Dataset& data, Shape3 input, int classes, DeviceDataset& slot,
                                 cudaStream_t stream = 0);

/// The parameters' names ("conv1.weight", ...) and shapes, in model order.
struct ParamLayout {
  std::vector<std::string> names;
  std::vector<std::vector<int>> shapes;

  /// The tensors' values, flat in model order, after checking that tensor i is
  /// names[i] + suffix with shapes[i] (std::invalid_argument naming the first that is not).
  std::vector<float> flatten_checked(const std::vector<NamedTensor>& tensors, const std::string& suffix) const;
  /// The inverse: `flat` cut into named tensors, names[i] + suffix.
  std::vector<NamedTensor> split(const std::vector<float>& flat, const std::string& suffix) const;
};

/// --profile on the GPU: a pair of CUDA events around each piece of work, read
/// back after each step and summed per row (a layer, the gather, the loss, ...)
/// and pass. Reading the events waits for the GPU, so a profiled epoch is slower.
class GpuProfiler {
 public:
  enum class Pass { Forward, Backward };

  GpuProfiler() = default;
  ~GpuProfiler();
  GpuProfiler(const GpuProfiler&) = delete;
  GpuProfiler& operator=(const GpuProfiler&) = delete;

  /// Adds a row named `name` and returns its index. Call before enable().
  std::size_t add_row(const std::string& name);
  /// Creates the events: until then time() only runs the work.
  void enable();
  /// Runs `work`; when enabled and `recording`, between two events recorded on `stream`.
  template <typename Work>
  void time(std::size_t row, Pass pass, bool recording, cudaStream_t stream, Work&& work) {
    if (!recording || sections_.empty()) {
      work();
      return;
    }
    Section& s = sections_[2 * row + (pass == Pass::Forward ? 0 : 1)];
    CUDA_CHECK(cudaEventRecord(s.start, stream));
    work();
    CUDA_CHECK(cudaEventRecord(s.stop, stream));
    s.pending = true;
  }
  /// Waits for the recorded events and adds their times to the rows; a row timed in
  /// this step counts one more call.
  void collect();
  /// Every row back to zero.
  void reset();
  const std::vector<LayerTime>& times() const { return times_; }

 private:
  struct Section {
    cudaEvent_t start = nullptr, stop = nullptr;
    bool pending = false;  ///< recorded and not yet read
  };
  std::vector<LayerTime> times_;
  std::vector<Section> sections_;  ///< two per row: forward, backward
};

/// *to = *from on `stream`, by one thread: `to` is pinned host memory mapped into the device (loss_slots_gpu.cu).
void copy_running_loss_gpu(const double* from, double* to, cudaStream_t stream);

/// The slots of common/loss_check.hpp on a GPU: slot i is one double of pinned
/// host memory, mapped into the device's address space, where a one-thread kernel
/// writes the running loss sum (copy_running_loss_gpu, loss_slots_gpu.cu: a
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
  /// After copied_by_the_step(), only the slot's event: the step has written the copy itself.
  void record(int slot);
  /// From now on each training step writes its own copy, from a kernel it runs anyway (stage 08's
  /// update: sgd_multi_tensor.cuh), into device_slots()[step % count()], with `step` the step's
  /// index in its epoch, which is `slot` of record(): no kernel of its own after each step.
  void copied_by_the_step() { copied_by_the_step_ = true; }
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

/// An epoch whose batches the device gathers itself (stages 06 and 08): the training
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

/// Values [begin, end) of an engine's flat gradient buffer that one layer's
/// backward pass writes (its weight, then its bias), with the layer's name.
struct GradientRange {
  std::size_t begin = 0, end = 0;
  std::string name;  ///< "fc1 (fc100)"
  std::size_t size() const { return end - begin; }
};

/// What data parallelism (stage 09) adds to a GPU engine's training step: the
/// engine calls these while it queues a step, captured into a CUDA graph or not,
/// so their work becomes part of the step.
///
/// An engine that takes a GradientSync (stage 06's CudnnEngine::set_gradient_sync)
/// calls gradients_queued() once per layer with parameters, in the order of
/// its gradient_ranges(), right after queueing that layer's last write to its
/// gradients; then before_update() once the whole backward pass is queued and
/// before anything reads a gradient. A step of a rank that has no examples
/// (the end of an epoch split over more ranks than examples) zeroes the
/// gradients and makes the same calls. Capturing a step is a collective choice
/// when the step holds NCCL calls (every rank captures, or none does), so the
/// engine replays its graph only for steps that step_may_be_captured() allows.
class GradientSync {
 public:
  virtual ~GradientSync() = default;
  /// The layer whose gradients are `range` has queued its last write to them on `stream`.
  virtual void gradients_queued(const GradientRange& range, cudaStream_t stream) = 0;
  /// Everything of the backward pass is queued on `stream`: make `stream` wait until the gradients are final.
  virtual void before_update(cudaStream_t stream) = 0;
  /// Whether the coming step may run as a CUDA graph (true unless the layer above says otherwise).
  virtual bool step_may_be_captured() const { return true; }
};

/// One epoch of a GPU engine: engine.begin_epoch(train, epoch), engine.train_batch(b) for
/// every batch, engine.end_epoch(). Stages 04, 05 and 06 train this way; only their steps differ.
///
/// `sums` are the DeviceSums the engine's training steps add to, on `stream`. `on_batch`
/// gets NaN for the loss, which stays on the device; instead, after each step, a copy of
/// the running loss sum is queued (DeviceLossSlots), and the copy of the step kLossCheckLag back is read
/// (course::train_steps_checked, common/loss_check.hpp). When one is NaN or Inf, this
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
