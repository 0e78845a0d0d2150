/// @file fused_step.hpp
/// @brief Stage 08: the step model the one GPU engine drives: a training step of a few fused kernels (glue, not a task).
///
/// A step of `cnn` at batch 64 is nine kernels:
///
/// | kernel                          | layers it runs                       | task |
/// |---------------------------------|--------------------------------------|------|
/// | batch gather (the engine's)     | the shuffled batch, by the step counter | -  |
/// | conv block forward              | conv1 + relu1 + pool1                | 8.1  |
/// | conv block forward              | conv2 + relu2 + pool2                | 8.1  |
/// | dense forward                   | (flatten1) fc1 + relu3               | 8.4  |
/// | softmax head                    | fc2 + loss, forward and backward     | 8.6  |
/// | dense backward                  | fc1 + relu3                          | 8.5  |
/// | conv block backward             | conv2 + relu2 + pool2: dW, db, dx    | 8.2, 8.3 |
/// | conv block backward             | conv1 + relu1 + pool1: dW, db        | 8.2  |
/// | sgd update (multi-tensor)       | every parameter; the loss check's copy; the step counter | 8.7 |
///
/// A model of dense layers only (the `mlp`) runs as the dense chain instead, two
/// kernels a step (dense_chain.cu): the gather, every layer forward, the loss and
/// every input gradient in clusters of blocks; then every weight gradient and the update.
///
/// The engine (common/gpu/gpu_engine.hpp) owns what every stage shares: the data
/// set, the epoch's order and the step counter on the device, the loss sums and
/// the NaN check, the parameters and velocities, evaluation, checkpoints and the
/// CUDA graph. This step runs its whole training step itself (StepModel::train_step):
/// its first kernel gathers the batch and its last copies the running loss for the check
/// and advances the counter (the step's end), so no kernel of the engine's runs around them. It
/// keeps, beside the engine's buffers, what fusion needs: each layer's output and
/// arg-max, the gradient each layer hands to the one below, and the partial sums of
/// every weight gradient (the update adds them, Task 8.7). The learning rate and the
/// momentum live in device memory, where the update reads them.
///
/// Under data parallelism (a GradientSync on the engine) the all-reduce needs every
/// gradient whole in the engine's flat buffer: the step then runs the engine's sequence
/// (StepModel::queue_gradients: the gather, forward(), loss(), backward(), the sync), where
/// backward() adds each layer's partial sums into that buffer as soon as the layer is done
/// (partial_sums.cu), and its update ends the step in the same one kernel.
///
/// Ways to run a full batch (a last, smaller batch always runs its kernels one by one):
/// - the engine's CUDA graph (the default): the step captured once and replayed;
/// - `--graph off`: the kernels launched one by one;
/// - `persistent = true`: one cooperative launch of the persistent kernel (Task 8.8) per step.
/// `--profile` launches every kernel on its own, between CUDA events.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "08_fused/fused_kernels.hpp"
#include "08_fused/fused_plan.hpp"
#include "common/train/engine.hpp"
#include "common/gpu/gpu_engine.hpp"
#include "common/gpu/step_model.hpp"

namespace course {

/// How the step runs its full batches.
struct FusedOptions {
  bool graph = true;        ///< replay each full batch as one CUDA graph (the engine's)
  bool persistent = false;  ///< run each step as one persistent kernel (then no graph)
  /// Launch each kernel of the step programmatically after the one before it (the graph and the one-by-one
  /// launches, never --profile; ignored on a GPU before sm_90): the next kernel is set up while the one before
  /// it still runs (wait_for_previous_kernel in fused_common.cuh).
  bool early_launch = true;
  /// Run an all-dense model's step (the `mlp`) as the dense chain: two kernels, the first in thread block
  /// clusters (dense_chain.cu; sm_90 and later, not with --persistent or --profile, which run Tasks 8.4 to 8.7).
  bool dense_chain = true;
};

/// The specs stage 08 can fuse (fused_plan.hpp), trained with the fused kernels of Tasks 8.1 to 8.8.
class FusedStep : public StepModel {
 public:
  /// Plans cfg's model. Throws std::invalid_argument, before anything touches the GPU, for a spec
  /// stage 08 cannot fuse (naming the layer), a loss other than cross-entropy and mse, or a batch below 1.
  explicit FusedStep(const EngineConfig& cfg, const FusedOptions& options = {});
  ~FusedStep() override;

  const ParamLayout& layout() const override { return layout_; }
  std::vector<NamedTensor> initial_parameters() const override;
  /// One row per fused layer: "conv1+relu1+pool1 (conv16k3p1,relu,pool2)".
  std::vector<std::string> layer_rows() const override;
  std::vector<GradientRange> gradient_ranges() const override { return ranges_; }
  /// Where the GPU has no clusters or programmatic dependent launch: what --early-launch and the dense chain become.
  std::vector<std::string> gpu_choices() const override;
  void allocate(int batch) override;
  /// Plans the whole step at B (its phases, the update's table) and writes a changed learning rate.
  void prepare(const StepContext& ctx, int B) override;

  /// Every training step: the fused kernels of the plan prepare() made, or, with a GradientSync
  /// (data parallelism), the engine's sequence with the gradients whole in ctx.grads.
  void train_step(const StepContext& ctx, int B) override;

  /// Evaluation, and steps with a GradientSync: every layer below the head;
  /// returns the head's input, which loss() reads.
  const float* forward(const StepContext& ctx, const float* x, int B) override;
  /// The head: the last layer and the loss in one kernel (and, when training, the head's backward).
  void loss(const StepContext& ctx, const float* head_input, const int* labels, int B, int* predictions) override;
  /// Every layer's backward below the head; each layer's partial sums added into ctx.grads as it finishes.
  void backward(const StepContext& ctx, int B) override;
  /// The multi-tensor update (Task 8.7) reading ctx.grads, one slice per tensor (a step of no examples:
  /// the engine then ends the step).
  void update(const StepContext& ctx) override;

  bool capturable() const override { return !persistent_enabled(); }
  /// The head adds the loss and the correct count, not the absolute errors of --loss mse.
  bool adds_absolute_errors() const override { return false; }
  /// The run's fused layers and the kernel and traffic table of one whole step (step_table()).
  nlohmann::json stage_results() const override;

  /// True when full batches run as one persistent kernel.
  bool persistent_enabled() const { return options_.persistent && !cfg_.profile; }
  /// True when the step's kernels launch programmatically, each before the one ahead has finished
  /// (asked for, not --profile or --persistent, and a GPU of compute capability 9.0 or later).
  bool early_launch_enabled() const {
    return options_.early_launch && gpu_launches_early_ && !cfg_.profile && !persistent_enabled();
  }
  /// True when each whole step is the dense chain's two kernels (FusedOptions::dense_chain: asked for, a
  /// model of dense layers only, at most kChainMaxLayers of them, a GPU with clusters, not persistent or profiled).
  bool dense_chain_enabled() const { return options_.dense_chain && chain_fits_ && !persistent_enabled() && !cfg_.profile; }
  /// Kernel launches of one whole training step at the full batch (1 when persistent).
  int kernels_per_step() const;
  /// Blocks of the persistent kernel at the full batch (0 unless persistent_enabled()).
  int persistent_grid() const { return persistent_grid_; }
  /// One line per kernel of a whole step at the full batch: what it runs, its blocks, shared
  /// memory and bytes; then the step's totals beside the layer-by-layer run's.
  std::string step_table() const;
  /// The fused layers of cfg's model (no GPU needed); throws like the constructor.
  static std::vector<FusedLayer> plan(const EngineConfig& cfg);
  const std::vector<FusedLayer>& layers() const { return layers_; }

 private:
  struct LayerBuffers {
    DeviceBuffer<float> out;             ///< [batch, out]: the layer's output (none for the head)
    DeviceBuffer<unsigned char> argmax;  ///< conv blocks with a pool: [batch, out]
    DeviceBuffer<float> dx;              ///< [batch, in]: dL/d(input), handed to the layer below (not for layer 0)
    DeviceBuffer<float> dw_partials, db_partials;
    DeviceBuffer<float> dz;  ///< the dense chain: [batch, out], dL/dz for the layer's weight gradient
    int wg_images = 0;     ///< conv: examples per slice, from the full batch's plan
    int max_k_slices = 1;  ///< dense: slices of the forward sum, from the full batch's plan
  };
  /// Where a phase's time goes under --profile: a layer's row, or the engine's gather or update row.
  enum class Row { Layer, Gather, Update, Chain, ChainUpdate };
  /// The phases of one whole training step at batch B, and what the update and the persistent kernel need.
  struct StepPlan {
    int B = 0;
    std::vector<FusedPhase> phases;           ///< gather, forward, head, backward, update
    std::vector<Row> rows;                    ///< each phase's profile row,
    std::vector<std::size_t> layer_of;        ///< its layer (Row::Layer),
    std::vector<GpuProfiler::Pass> passes;    ///< and its pass
    DeviceBuffer<SgdTensor> tensors;          ///< the update's table
    long long partial_floats = 0;             ///< partial sums the update reads
    DeviceBuffer<FusedPhase> device_phases;   ///< the phases as the persistent kernel reads them
    DenseChainArgs chain{};                   ///< the dense chain's arguments, when the plan is the chain
    DenseChainUpdateArgs chain_update{};      ///< (its two phases point here)
    DenseChainUpdateArgs idle_update{};       ///< the warm-up's: no tile, nothing updated
    long uploaded = -1;                       ///< the engine's TrainingBatch::binding the device copy was made for
    int grid = 0, smem_bytes = 0;             ///< the persistent launch
  };
  using Pass = GpuProfiler::Pass;

  static EngineConfig checked(const EngineConfig& cfg);
  /// The head's loss: cfg's mse, or cross-entropy.
  FusedLoss fused_loss() const { return cfg_.loss == "mse" ? FusedLoss::Mse : FusedLoss::CrossEntropy; }
  /// The input of layer i when the batch is at x.
  const float* input_of(std::size_t i, const float* x) const;
  FusedPhase forward_phase(std::size_t i, int B, const float* x, const float* params);
  FusedPhase head_phase(int B, const float* x, const float* params, const int* labels, DeviceSums& sums, bool train,
                        int* predictions);
  FusedPhase backward_phase(std::size_t i, int B, const float* x, const float* params);
  /// The whole step at B, planned by prepare().
  StepPlan& plan_for(const StepContext& ctx, int B);
  void add_phase(StepPlan& plan, const FusedPhase& p, Row row, std::size_t layer, Pass pass);
  void add_dense_chain(StepPlan& plan, const StepContext& ctx, int B);
  void add_update(StepPlan& plan, const StepContext& ctx, const std::vector<int>& slices);
  /// `p` with this step's data, sums and loss slots (and, for the warm-up, an update that changes nothing).
  FusedPhase bound(const FusedPhase& p, StepPlan& plan, const StepContext& ctx);
  void time_phase(const StepContext& ctx, Row row, std::size_t layer, Pass pass, const FusedPhase& p);
  void run_persistent(StepPlan& plan, const StepContext& ctx);
  /// With a GradientSync: the engine's sequence, then the update ending the step.
  void train_step_with_sync(const StepContext& ctx, int B);
  /// The multi-tensor update of ctx.grads; with `end_step`, it also ends the step (the loss check's copy, the counter).
  void launch_update(const StepContext& ctx, bool end_step);
  void note_full_step(const StepPlan& full);
  std::string row_name(Row row, std::size_t layer) const;

  EngineConfig cfg_;
  FusedOptions options_;
  std::vector<FusedLayer> layers_;
  ParamLayout layout_;
  std::vector<GradientRange> ranges_;  ///< each layer's weight and bias in the flat buffers, last layer first
  int target_blocks_ = 264;  ///< blocks a kernel should have to fill the GPU: two per multiprocessor
  bool gpu_launches_early_ = false;  ///< the GPU is sm_90 or later (programmatic dependent launch, clusters)
  bool chain_fits_ = false;          ///< the model can run as the dense chain on this GPU

  std::vector<LayerBuffers> buffers_;
  DeviceBuffer<float> dense_partials_;      ///< the dense forward's split sums
  DeviceBuffer<unsigned int> counters_;     ///< the dense forward's tickets, 0 between launches
  DeviceBuffer<SgdTensor> whole_gradients_;  ///< the engine's way: one tensor, the flat gradient, one slice
  std::map<int, std::unique_ptr<StepPlan>> plans_;
  const float* last_x_ = nullptr;  ///< the engine's way: the last forward()'s batch
  int head_slices_ = 0;            ///< and the last loss()'s partial sums of the head

  // One whole step's kernels at the full batch, for step_table() and stage_results().
  std::vector<KernelTraffic> step_traffic_;
  std::vector<int> step_blocks_, step_smem_;
  KernelTraffic layerwise_;
  int persistent_grid_ = 0;
};

/// The one GPU engine on stage 08's fused step (`initial`: as GpuEngine's).
std::unique_ptr<GpuEngine> make_fused_engine(const EngineConfig& cfg, const FusedOptions& options = {},
                                             const std::vector<NamedTensor>& initial = {});
/// The fused step `engine` drives (std::logic_error when it drives another).
const FusedStep& fused_step(const GpuEngine& engine);

}  // namespace course
