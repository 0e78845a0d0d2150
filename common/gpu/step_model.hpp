/// @file step_model.hpp
/// @brief What a stage gives the one GPU engine (gpu_engine.hpp): its training step, layer by layer.
///
/// The engine owns everything a step does not depend on: the data set on the device,
/// the epoch's order and the gather of each batch, the loss sums, the parameter,
/// gradient and velocity buffers, the profiler, evaluation, checkpoints and the CUDA
/// graph. A step model owns its layers and their device memory, and queues their work:
///
///     x [B, D]  --forward-->  logits [B, K]  --loss-->  dL/dlogits  --backward-->  grads  --update-->  params
///
/// x holds B examples of D = C*H*W values each, NCHW per example, row-major; the flat
/// buffers hold every parameter in the order of layout() (a layer's weight, then its bias).
/// Every call only queues work on ctx.stream and never waits for the device, so the
/// engine may capture a whole step into a CUDA graph.
///
/// The engine has one way in: train_step() for every training step, forward() and loss() for
/// evaluation, update() for a step of no examples (data parallelism). train_step's default does
/// the engine's part around the layers (the gather, the timing rows, the sync, the step's end),
/// so a stage writes its layers; a stage that fuses the whole step overrides train_step.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <nlohmann/json_fwd.hpp>

#include "common/train/engine.hpp"

#include "common/gpu/device_sums.hpp"
#include "common/gpu/gpu_profiler.hpp"
#include "common/gpu/gradient_sync.hpp"
#include "common/gpu/param_layout.hpp"
#include "common/core/tensor.hpp"

namespace course {

/// Where a training step's batch comes from and how the step ends: the engine's part of every
/// training step. StepModel::train_step's default runs it with the engine's own kernels (the
/// gather, end_training_step); a step model that runs its own whole step may do the same work
/// inside its kernels instead (stage 08 gathers in its first kernel and ends the step in its last).
struct TrainingBatch {
  const float* images = nullptr;  ///< [N, D]: the training set on the device
  const int* labels = nullptr;    ///< [N]
  const int* order = nullptr;     ///< [N]: the epoch's order; batch s is order[s * full_batch, s * full_batch + B)
  int* step = nullptr;            ///< [1]: the step counter s, which the gather reads and the step's end advances
  int full_batch = 0;             ///< the engine's batch size (a last batch may be smaller)
  long D = 0;                     ///< values per example (C*H*W)
  float* x = nullptr;             ///< [full_batch, D]: the engine's batch buffer, where the gather writes
  int* y = nullptr;               ///< [full_batch]
  double* loss_slots = nullptr;   ///< the step's end copies the running loss sum into loss_slots[s % loss_slot_count]
  int loss_slot_count = 0;        ///< (pinned host memory mapped into the device: DeviceLossSlots)
  bool update = true;             ///< false: an uncounted warm-up pass: no update, and the step not ended
  /// Changes whenever an address above, ctx.sums or `update` changes: a step that keeps a copy of
  /// them on the device (stage 08's persistent kernel) copies them again only then.
  long binding = 0;
  std::size_t gather_row = 0, loss_row = 0, update_row = 0;  ///< the engine's --profile rows
};

/// What the engine hands a step model for one batch.
struct StepContext {
  cudaStream_t stream = nullptr;
  float* params = nullptr;     ///< [layout().total()], flat in model order
  float* grads = nullptr;      ///< same layout: what backward() writes (overwrites)
  float* velocity = nullptr;   ///< same layout: the SGD momentum
  long param_count = 0;
  /// [2] in device memory: {learning rate, momentum}, read by the update when it runs. Not kernel
  /// arguments: a captured step keeps its arguments, and it reads these, so a new rate from the
  /// schedule needs no new capture.
  const float* hyper = nullptr;
  DeviceSums* sums = nullptr;  ///< where loss() adds the loss, the correct count (and the absolute errors)
  bool training = false;       ///< loss() writes dL/dlogits for backward() only when training
  GpuProfiler* profiler = nullptr;
  bool recording = false;      ///< inside a profiled training step
  GradientSync* sync = nullptr;
  const TrainingBatch* batch = nullptr;  ///< in a training step: where its batch comes from, how it ends

  /// Runs `work`, timed for --profile as profile row `row` (a layer's index) in `pass`.
  template <typename Work>
  void time(std::size_t row, GpuProfiler::Pass pass, Work&& work) const {
    profiler->time(row, pass, recording, stream, work);
  }
  /// Whether backward() should finish each layer's gradients as soon as that layer is done, because
  /// the sync starts work then (GradientSync::uses_each_layer); false without a sync.
  bool gradients_wanted_layer_by_layer() const { return sync != nullptr && sync->uses_each_layer(); }
  /// Called by backward() once a layer's last write to its gradients is queued (empty ranges are skipped).
  void gradients_queued(const GradientRange& range) const {
    if (sync != nullptr && range.size() > 0) sync->gradients_queued(range, stream);
  }
};

/// The end of a training step, queued on ctx.stream after its work: the running loss sum copied into
/// ctx.batch->loss_slots[s % count] for the NaN check, then the step counter s advanced (one thread,
/// end_training_step_gpu). The default train_step ends with it, and so does a step of no examples.
void end_training_step(const StepContext& ctx);

/// What every GPU step checks of its config before it plans anything: a loss it has (cross-entropy
/// or mse; `stage`, "stage 04", names the step in the message), a batch size and a class count of at
/// least 1, and an output activation that goes with the loss (check_output_activation).
/// Throws std::invalid_argument.
void check_step_config(const EngineConfig& cfg, const std::string& stage);

/// A stage's training step, as the engine drives it.
class StepModel {
 public:
  virtual ~StepModel() = default;
  /// The parameters' names and shapes in model order: the layout of the flat buffers.
  virtual const ParamLayout& layout() const = 0;
  /// What a run starts from when it is given no parameters (course::initial_parameters for the config's seed).
  virtual std::vector<NamedTensor> initial_parameters() const = 0;
  /// One --profile row per layer ("conv1 (conv16k3p1)"): ctx.time's rows 0, 1, ...
  virtual std::vector<std::string> layer_rows() const = 0;
  /// The gradients of each layer with parameters, in the order backward() finishes them (last layer first).
  virtual std::vector<GradientRange> gradient_ranges() const = 0;
  /// The step's own device memory for batches of up to `batch`; called once, after the engine's checks.
  virtual void allocate(int batch) = 0;

  /// Queues the forward pass of x [B, D] through every layer; returns the logits [B, K] (the step's memory).
  virtual const float* forward(const StepContext& ctx, const float* x, int B) = 0;
  /// Queues the loss of `logits` against `labels` [B] into ctx.sums; writes each row's prediction
  /// when `predictions` is not null, and dL/dlogits (of the batch mean) when ctx.training.
  virtual void loss(const StepContext& ctx, const float* logits, const int* labels, int B, int* predictions) = 0;
  /// Queues the backward pass of the last forward(), from the dL/dlogits of the last loss(), into
  /// ctx.grads, calling ctx.gradients_queued() after each layer with parameters.
  virtual void backward(const StepContext& ctx, int B) = 0;
  /// Queues one update of every parameter from ctx.grads (SGD with momentum: ctx.hyper).
  virtual void update(const StepContext& ctx) = 0;

  /// Queues one training step of B examples, the batch that *ctx.batch->step names: the gather, forward,
  /// the loss into ctx.sums, backward, ctx.sync's before_update(), and, when ctx.batch->update, the update
  /// and the step's end (end_training_step). The engine calls it for every training step, warm-up passes
  /// included. The default runs those pieces one by one, timed in the layers' and the engine's rows;
  /// a step model may run the same step its own way (stage 08 fuses it into a few kernels).
  virtual void train_step(const StepContext& ctx, int B);

  /// Called before a training step or an evaluation pass of B examples is queued, never inside a
  /// capture: a step whose setup depends on the batch size (descriptors, algorithms, a workspace)
  /// makes it here; it may wait for ctx.stream and allocate. The default: nothing to prepare.
  virtual void prepare(const StepContext& ctx, int B);
  /// An address a captured step holds that prepare() may change (a workspace that grows for a new
  /// batch size); when it changes, the engine captures the step again. The default: none.
  virtual const void* captured_memory() const { return nullptr; }

  /// Whether loss() adds the absolute errors of --loss mse to ctx.sums (Engine::reports_mae()).
  virtual bool adds_absolute_errors() const { return true; }

  /// Whether a training step may be captured into a CUDA graph (it launches nothing that a capture forbids).
  virtual bool capturable() const { return true; }
  /// Engine::nondeterminism(): why two runs of this step may differ in the last bits ("" when they cannot).
  virtual std::string nondeterminism() const { return ""; }
  /// Engine::gpu_choices(): what the step left out or replaced on this GPU, and why (gpu_capability.hpp).
  virtual std::vector<std::string> gpu_choices() const { return {}; }
  /// Engine::engine_state(): what a checkpoint records of the step's own choices (the default: none).
  virtual EngineState engine_state() const { return {}; }
  /// What the run's step is made of, for the --json file's "stage_results" (Engine::stage_results).
  virtual nlohmann::json stage_results() const;

 protected:
  /// The default train_step up to its update: the gather into ctx.batch->x, forward(), loss() (timed
  /// in ctx.batch->loss_row), backward() and ctx.sync's before_update(): the gradients whole in ctx.grads.
  void queue_gradients(const StepContext& ctx, int B);
};

// ---- for a step whose layers keep their gradients' range in a member `grads` (a GradientRange,
// empty for a layer without parameters) named for the layer's --profile row ("fc1 (fc100)") ----

/// layer_rows(): each layer's grads.name, in model order.
template <class Layer>
std::vector<std::string> rows_named_by_grads(const std::vector<Layer>& layers) {
  std::vector<std::string> rows;
  for (const Layer& l : layers) rows.push_back(l.grads.name);
  return rows;
}

/// gradient_ranges(): the non-empty ranges, last layer first, the order a backward pass finishes them.
template <class Layer>
std::vector<GradientRange> ranges_last_layer_first(const std::vector<Layer>& layers) {
  std::vector<GradientRange> ranges;
  for (auto l = layers.rbegin(); l != layers.rend(); ++l)
    if (l->grads.size() > 0) ranges.push_back(l->grads);
  return ranges;
}

}  // namespace course
