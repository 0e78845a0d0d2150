/// @file gpu_engine.hpp
/// @brief The one GPU engine: course::Engine implemented once, around a stage's step model (given code).
///
/// Where everything lives:
///
/// | on the device                                                 | moved to / from the host              |
/// |---------------------------------------------------------------|---------------------------------------|
/// | the training and test sets (images, labels)                   | uploaded once, on first use           |
/// | every parameter, gradient and velocity, one flat buffer each  | parameters at start and on get/set    |
/// | the gathered batch; the step model's activations and gradients| never                                 |
/// | the epoch's shuffled order and the step counter               | order uploaded once per epoch         |
/// | the epoch's loss sum and correct count                        | read once per epoch; the loss sum also copied back after every step, read a few steps late (the NaN check) |
///
/// Before the first step of each batch size (at begin_epoch, for the epoch's full and last
/// batches) and before each evaluation batch, the step model prepares that size
/// (StepModel::prepare: descriptors, algorithms, a workspace), never inside a capture.
/// A training step is the step model's train_step() on the engine's stream: by default the gather
/// of the batch the device's step counter names, the step model's forward, loss and backward, the
/// GradientSync hooks when there are any, the update and the step's end (the loss check's copy and
/// the counter's advance); a step model that fuses its step (stage 08) does the same in its own
/// kernels. The engine hands it the addresses (StepContext, TrainingBatch). The trainer first
/// has the engine pay what a step costs once (warm_up: the upload, each batch size prepared, an
/// uncounted pass of each, the capture), before the first epoch's clock. With the graph on
/// (the default, where the step model is capturable), the first full batch (or the warm-up) records that
/// sequence as a CUDA graph and every full batch replays it, until an address in it changes
/// (the data, the order, StepModel::captured_memory()); a new learning rate needs no new
/// capture, since the update reads it from device memory (StepContext::hyper). A last,
/// smaller batch runs the same sequence uncaptured, and so does every
/// step under --profile, with CUDA events around each layer.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "common/train/engine.hpp"
#include "common/data/epoch_order_ahead.hpp"
#include "common/gpu/engine_parts.hpp"
#include "common/gpu/step_capture.hpp"
#include "common/gpu/step_model.hpp"

namespace course {

/// The engine's own switches (a trainer's --graph).
struct GpuEngineOptions {
  bool graph = true;  ///< replay each full training batch as one CUDA graph, where the step can be captured
};

/// A stream the engine creates and destroys (default flags: it waits for the legacy stream's copies).
class OwnedStream {
 public:
  OwnedStream();
  ~OwnedStream();
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

class GpuEngine : public Engine {
 public:
  /// Trains `step` with cfg's batch, learning rate, momentum, seed and loss, starting from
  /// `initial` (tensors in model order), or, when it is empty, step->initial_parameters().
  /// Throws std::invalid_argument before touching the GPU for a batch below 1 or initial
  /// parameters that do not match step->layout(); course::GpuError when the GPU cannot be used.
  GpuEngine(const EngineConfig& cfg, std::unique_ptr<StepModel> step, const std::vector<NamedTensor>& initial = {},
            const GpuEngineOptions& options = {});
  ~GpuEngine() override;
  GpuEngine(const GpuEngine&) = delete;
  GpuEngine& operator=(const GpuEngine&) = delete;

  /// course::gpu_name(), e.g. "NVIDIA H100 80GB HBM3 (sm_90)".
  std::string device() const override;
  /// Read by every update queued after this call, a captured one included (StepContext::hyper).
  void set_learning_rate(double lr) override;
  /// Engine::warm_up: an epoch of `train` begun in the set's own order, warm_up_begun_epoch(), and
  /// ended uncounted. The epochs that follow start from the same parameters, velocity and order.
  std::string warm_up(const Dataset& train) override;
  /// begin_epoch(), train_batch() for every batch, end_epoch(), with the NaN check of
  /// train_epoch_in_batches(): `on_batch` gets NaN for the loss, which stays on the device.
  EpochStats train_epoch(const Dataset& train, int epoch, const BatchCallback& on_batch) override;
  EpochStats evaluate(const Dataset& data, std::vector<int>* predictions) override;
  std::vector<NamedTensor> get_parameters() override;
  void set_parameters(const std::vector<NamedTensor>& params) override;
  /// The SGD velocity of every parameter, in model order ("fc1.weight.velocity", ...), for checkpoints.
  std::vector<NamedTensor> get_optimizer_state() override;
  void set_optimizer_state(const std::vector<NamedTensor>& state) override;
  /// With EngineConfig::profile: every layer's GPU time, then rows for the gather, the loss and the
  /// update; the loss row is left out when the step never timed it (a step whose head computes the loss
  /// times it in the head's row).
  std::vector<LayerTime> layer_times() const override;
  void reset_layer_times() override { profiler_.reset(); }
  /// With --loss mse: whether the step model's loss also adds up the absolute errors.
  bool reports_mae() const override { return step_->adds_absolute_errors(); }
  /// The step model's StepModel::stage_results().
  nlohmann::json stage_results() const override;
  /// The step model's StepModel::nondeterminism().
  std::string nondeterminism() const override { return step_->nondeterminism(); }
  /// The step model's StepModel::gpu_choices().
  std::vector<std::string> gpu_choices() const override { return step_->gpu_choices(); }
  /// The step model's StepModel::engine_state() (what a checkpoint records of its choices).
  EngineState engine_state() const override { return step_->engine_state(); }

  const StepModel& step() const { return *step_; }
  /// The batch size of full steps (EngineConfig::batch).
  int batch() const { return cfg_.batch; }
  /// The flat gradient buffer: parameter_count() floats, laid out like the parameters.
  float* gradients() { return grads_.get(); }
  std::size_t parameter_count() const { return params_.size(); }
  /// True when full batches are replayed as a CUDA graph (on, capturable, and not profiling).
  bool graph_enabled() const { return options_.graph && step_->capturable() && !cfg_.profile; }
  /// Training steps run as graph replays since construction.
  long graph_replays() const { return graph_replays_; }
  /// Times the training step was captured since construction (a capture per new key, GraphKey).
  long graph_captures() const { return graph_captures_; }
  /// Nodes of the captured step (0 before the first capture).
  std::size_t graph_nodes() const { return graph_.nodes(); }

  // ---- the pieces of train_epoch(), public for the benchmarks, the tests and data parallelism ----

  /// Uploads `train` unless the device holds it, then the example order of `epoch`
  /// (course::epoch_order), and zeroes the step counter and the epoch's sums.
  void begin_epoch(const Dataset& train, int epoch);
  /// The same with the order given (indices into `train`).
  void begin_epoch_in_order(const Dataset& train, const std::vector<int>& order);
  /// Batches of the current epoch.
  int num_batches() const { return epoch_.num_batches(cfg_.batch); }
  /// Queues the step of batch b, the next one of the epoch (std::logic_error otherwise), and returns
  /// without waiting for the GPU (with profiling on it waits, to read the timers).
  void train_batch(int b);
  /// A step with no examples after the last batch: zero gradients, the sync hooks, the update.
  void train_batch_without_examples();
  /// The one-off costs of the epoch begun and not yet stepped, paid now: one uncounted pass (no
  /// update, the step counter untouched, the sums elsewhere) of the full batch and, without a
  /// GradientSync, of the last batch's size, then the full step's capture where the graph is on and
  /// no sync takes part. A sync's hooks run in the full pass, so every rank of data parallelism must
  /// call it at the same point. Returns what it did, for the trainer's setup line.
  std::string warm_up_begun_epoch();
  /// Waits for the GPU and returns the epoch's sums (one copy to the host).
  EpochStats end_epoch();

  /// From now on every training step calls `sync`'s hooks (nullptr: none); a captured step is captured again.
  void set_gradient_sync(GradientSync* sync);
  /// Forgets the captured step: the next full batch is captured anew. Data parallelism calls it
  /// on every rank at each epoch's start, because a capture holding NCCL calls is collective
  /// (every rank captures at the same step), and what makes a rank capture again by itself
  /// (a step's workspace growing for a new batch size, say) differs from rank to rank.
  void drop_graph();
  /// The step model's gradient_ranges(): where each layer's gradients lie in the flat buffer.
  std::vector<GradientRange> gradient_ranges() const { return step_->gradient_ranges(); }
  cudaStream_t stream() const { return stream_.get(); }

 private:
  /// What a captured step points into or holds by value; a change means capturing again.
  struct GraphKey {
    const void* images = nullptr;
    const void* labels = nullptr;
    const void* order = nullptr;
    const void* step_memory = nullptr;  ///< StepModel::captured_memory()
    bool operator==(const GraphKey& o) const {
      return images == o.images && labels == o.labels && order == o.order && step_memory == o.step_memory;
    }
  };
  using Pass = GpuProfiler::Pass;

  /// `initial` (or step's initial_parameters()), flat, checked against step's layout.
  static std::vector<float> starting_values(const StepModel& step, const std::vector<NamedTensor>& initial);
  StepContext context(DeviceSums& sums, bool training);
  /// batch_parts_'s fields that stay for the engine's life (the step counter, the batch buffers, the loss
  /// slots, the profile rows); begin_epoch_in_order() sets the epoch's data, queue_step() `update`.
  void set_batch_parts();
  /// The step model's train_step() of B examples into `sums` (`update` false: an uncounted warm-up pass).
  void queue_step(int B, DeviceSums& sums, bool update);
  /// Queues the copy of cfg_'s rate and momentum to hyper_, behind the steps in flight.
  void upload_hyper();
  /// The full step recorded as a CUDA graph for the current key (capturing it now unless the graph in
  /// hand has that key, after one uncaptured warm-up pass the first time); false when capturing
  /// failed, which turns the graph off for the rest of the run.
  bool captured_step_ready();
  void run_captured();
  /// StepModel::prepare() for batches of B, outside any capture.
  void prepare(int B);
  std::vector<NamedTensor> split(const DeviceBuffer<float>& flat, const std::string& suffix);
  void upload(DeviceBuffer<float>& flat, const std::vector<NamedTensor>& tensors, const std::string& suffix);

  EngineConfig cfg_;
  std::unique_ptr<StepModel> step_;
  GpuEngineOptions options_;
  std::vector<float> start_;  ///< the initial parameters, flat, checked before the stream touches the GPU
  OwnedStream stream_;  // declared before every GPU resource, so destroyed after them
  DeviceBuffer<float> params_, grads_, velocity_;
  DeviceBuffer<float> hyper_;        ///< [2]: {lr, momentum} (StepContext::hyper)
  DeviceBuffer<float> batch_;        ///< the gathered batch [batch, D]
  DeviceBuffer<int> batch_labels_;   ///< [batch]
  DeviceBuffer<int> predictions_;
  DeviceSums sums_, eval_sums_, scratch_sums_;  ///< training, evaluation, the uncounted warm-up step
  DeviceEpoch epoch_;       ///< the training set, the epoch's order and the step counter, on the device
  EpochOrderAhead orders_;  ///< the next epoch's order, shuffled on the host while this epoch runs
  DeviceDataset eval_data_;
  GradientSync* sync_ = nullptr;
  TrainingBatch batch_parts_;           ///< what StepContext::batch points to
  const DeviceSums* bound_sums_ = nullptr;  ///< the sums of the last step queued (TrainingBatch::binding)

  StepCapture graph_;
  GraphKey graph_key_;
  bool warmed_up_ = false;
  long graph_replays_ = 0, graph_captures_ = 0;

  GpuProfiler profiler_;  ///< one row per layer, then gather, loss, update
  std::size_t gather_row_ = 0, loss_row_ = 0, update_row_ = 0;
  bool recording_ = false;
};

/// What a trainer prints after "graph: ": whether and why full batches run as one CUDA graph.
std::string graph_note(const GpuEngine& engine, bool profile);

}  // namespace course
