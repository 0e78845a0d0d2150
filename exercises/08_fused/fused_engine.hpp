/// @file fused_engine.hpp
/// @brief Stage 08: the engine the shared trainer drives: a training step of a few fused kernels (glue, not a task).
///
/// A step of `cnn` at batch 64 is nine kernels:
///
/// | kernel                          | layers it runs                       | task |
/// |---------------------------------|--------------------------------------|------|
/// | batch gather (stage 06's)       | the shuffled batch, by the step counter | 6.10 |
/// | conv block forward              | conv1 + relu1 + pool1                | 8.1  |
/// | conv block forward              | conv2 + relu2 + pool2                | 8.1  |
/// | dense forward                   | (flatten1) fc1 + relu3               | 8.4  |
/// | softmax head                    | fc2 + loss, forward and backward     | 8.6  |
/// | dense backward                  | fc1 + relu3                          | 8.5  |
/// | conv block backward             | conv2 + relu2 + pool2: dW, db, dx    | 8.2, 8.3 |
/// | conv block backward             | conv1 + relu1 + pool1: dW, db        | 8.2  |
/// | sgd update (multi-tensor)       | every parameter; the step counter    | 8.7  |
///
/// A model of dense layers only (the `mlp`) runs as the dense chain instead, two
/// kernels a step (dense_chain.cu): the gather, every layer forward, the loss and
/// every input gradient in clusters of blocks; then every weight gradient and the update.
///
/// Everything lives on the device as in stage 06 (data sets, parameters,
/// velocities, activations, the epoch's order, the step counter, the loss sums),
/// plus what fusion needs: each layer's output and arg-max, the gradient each
/// layer hands to the one below, and the partial sums of every weight gradient
/// (Task 8.7 adds them). The learning rate and the momentum live in device
/// memory too, so the captured step follows the learning-rate schedule.
///
/// Three ways to run a full batch (a last, smaller batch always runs its kernels
/// one by one, uncaptured):
/// - the graph (the default): the step captured once as a CUDA graph
///   (stage 06's StepGraph, Task 6.10) and replayed;
/// - `graph = false`: the kernels launched one by one;
/// - `persistent = true`: one cooperative launch of the persistent kernel (Task 8.8) per step.
/// `--profile` launches every kernel on its own, between CUDA events.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/gpu/engine_parts.hpp"
#include "06_cudnn/step_graph.hpp"
#include "08_fused/fused_kernels.hpp"
#include "08_fused/fused_plan.hpp"
#include "common/arch.hpp"
#include "common/cuda_check.hpp"
#include "common/engine.hpp"
#include "common/epoch_order_ahead.hpp"

namespace course {

/// How the engine runs its full batches.
struct FusedOptions {
  bool graph = true;        ///< replay each full batch as one CUDA graph
  bool persistent = false;  ///< run each step as one persistent kernel (then no graph)
  /// Launch each kernel of the step programmatically after the one before it (the graph and the one-by-one
  /// launches, never --profile; ignored on a GPU before sm_90): the next kernel is set up while the one before
  /// it still runs (wait_for_previous_kernel in fused_common.cuh).
  bool early_launch = true;
  /// Run an all-dense model's step (the `mlp`) as the dense chain: two kernels, the first in thread block
  /// clusters (dense_chain.cu; sm_90 and later, not with --persistent or --profile, which run Tasks 8.4 to 8.7).
  bool dense_chain = true;
};

/// Trains the specs stage 08 can fuse (fused_plan.hpp) with the fused kernels of Tasks 8.1 to 8.8.
class FusedEngine : public Engine {
 public:
  /// Builds cfg's model from `initial` (tensors in model order), or when empty from
  /// initial_parameters(), the weights every stage starts from for cfg.seed.
  /// Throws std::invalid_argument before touching the GPU for a spec stage 08 cannot
  /// fuse (naming the layer), a loss other than cross-entropy and mse, or a batch
  /// below 1; course::GpuError when the GPU cannot be used.
  explicit FusedEngine(const EngineConfig& cfg, const FusedOptions& options = {},
                       const std::vector<NamedTensor>& initial = {});
  ~FusedEngine() override;
  FusedEngine(const FusedEngine&) = delete;
  FusedEngine& operator=(const FusedEngine&) = delete;

  std::string device() const override;
  /// Written to device memory, where the update (captured or not) reads it.
  void set_learning_rate(double lr) override;
  /// begin_epoch(), train_batch() for every batch in order, end_epoch().
  /// `on_batch` gets NaN for the loss, which stays on the device; a NaN or Inf loss
  /// throws NonFiniteLoss a few steps later (train_epoch_in_batches()).
  EpochStats train_epoch(const Dataset& train, int epoch, const BatchCallback& on_batch) override;
  EpochStats evaluate(const Dataset& data, std::vector<int>* predictions) override;
  std::vector<NamedTensor> get_parameters() override;
  void set_parameters(const std::vector<NamedTensor>& params) override;
  std::vector<NamedTensor> get_optimizer_state() override;
  void set_optimizer_state(const std::vector<NamedTensor>& state) override;
  /// With EngineConfig::profile: GPU time of every fused layer's kernels (the head's
  /// whole kernel under forward), the gather and the update.
  std::vector<LayerTime> layer_times() const override { return profiler_.times(); }
  void reset_layer_times() override { profiler_.reset(); }
  /// The run's fused layers and the kernel and traffic table of one full step (step_table()).
  nlohmann::json stage_results() const override;

  // ---- the pieces of train_epoch(), public for the benchmarks and tests ----

  /// Uploads `train` (when not already on the device) and the order of `epoch`,
  /// zeroes the step counter and the epoch's sums, and plans the batch sizes of the epoch.
  void begin_epoch(const Dataset& train, int epoch);
  int num_batches() const;
  /// Queues training step b, the next of the epoch (the step counter lives on the device).
  void train_batch(int b);
  /// Waits for the GPU and returns the epoch's sums.
  EpochStats end_epoch();

  /// True when full batches are replayed as a CUDA graph.
  bool graph_enabled() const { return options_.graph && !options_.persistent && !cfg_.profile; }
  /// True when full batches run as one persistent kernel.
  bool persistent_enabled() const { return options_.persistent && !cfg_.profile; }
  /// True when the step's kernels launch programmatically, each before the one ahead has finished
  /// (asked for, not --profile or --persistent, and a GPU of compute capability 9.0 or later).
  bool early_launch_enabled() const {
    return options_.early_launch && gpu_launches_early_ && !cfg_.profile && !persistent_enabled();
  }
  /// True when each training step is the dense chain's two kernels (FusedOptions::dense_chain: asked for, a
  /// model of dense layers only, at most kChainMaxLayers of them, a GPU with clusters, not persistent or profiled).
  bool dense_chain_enabled() const { return options_.dense_chain && chain_fits_ && !persistent_enabled() && !cfg_.profile; }
  long graph_replays() const { return graph_replays_; }
  std::size_t graph_nodes() const { return graph_.nodes(); }
  /// Kernel launches of one full training step as this engine runs it (1 when persistent).
  int kernels_per_step() const;
  /// Blocks of the persistent kernel at the full batch (0 unless persistent_enabled()).
  int persistent_grid() const { return persistent_grid_; }
  /// One line per kernel of a full training step: what it runs, its blocks, shared
  /// memory and bytes; then the step's totals beside the layer-by-layer run's.
  std::string step_table() const;
  /// The fused layers of cfg's model (no GPU needed); throws like the constructor.
  static std::vector<FusedLayer> plan(const EngineConfig& cfg);
  const std::vector<FusedLayer>& layers() const { return layers_; }
  cudaStream_t stream() const { return stream_.get(); }

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
  /// What a step points into that can move between epochs: the data set and the order.
  struct DataKey {
    const void* images = nullptr;
    const void* labels = nullptr;
    const void* order = nullptr;
    bool operator==(const DataKey& o) const { return images == o.images && labels == o.labels && order == o.order; }
  };
  /// The phases of one training step at batch B, and what the update and the persistent kernel need.
  struct StepPlan {
    int B = 0;
    std::vector<FusedPhase> phases;           ///< gather, forward, head, backward, update
    std::vector<std::size_t> rows;            ///< the profiler row of each phase
    std::vector<GpuProfiler::Pass> passes;    ///< and its pass
    DeviceBuffer<SgdTensor> tensors;          ///< the update's table
    long long partial_floats = 0;             ///< partial sums the update reads
    DeviceBuffer<FusedPhase> device_phases;   ///< the phases as the persistent kernel reads them
    DenseChainArgs chain{};                   ///< the dense chain's arguments, when the plan is the chain
    DenseChainUpdateArgs chain_update{};      ///< (its two phases point here)
    DataKey uploaded;                         ///< the data the device copy points into
    int grid = 0, smem_bytes = 0;             ///< the persistent launch
  };
  struct StreamDeleter {
    void operator()(cudaStream_t s) const { cudaStreamDestroy(s); }
  };
  using Pass = GpuProfiler::Pass;

  static EngineConfig checked(const EngineConfig& cfg);
  /// The head's loss: cfg's mse, or cross-entropy.
  FusedLoss fused_loss() const { return cfg_.loss == "mse" ? FusedLoss::Mse : FusedLoss::CrossEntropy; }
  /// Where the step's last kernel copies the running loss for the loss check.
  LossCheckCopy loss_check_copy();
  void allocate();
  /// The input of layer i when the batch is at x.
  const float* input_of(std::size_t i, const float* x) const;
  /// The forward phases of a batch of B read from `x`, then the head (training or evaluating).
  void add_forward(StepPlan& plan, int B, const float* x, const int* labels, DeviceSums& sums, bool train,
                   int* predictions);
  StepPlan& plan_for(int B);
  DataKey data_key() const;
  /// Points the step's gather at the epoch's data (and the persistent kernel's copy, when it runs).
  void prepare(StepPlan& plan);
  void run_uncaptured(const StepPlan& plan, bool update);
  void run_captured(StepPlan& plan);
  std::vector<NamedTensor> split(const DeviceBuffer<float>& flat, const std::string& suffix);

  EngineConfig cfg_;
  FusedOptions options_;
  std::vector<FusedLayer> layers_;
  ParamLayout layout_;
  int target_blocks_ = 264;  ///< blocks a kernel should have to fill the GPU: two per multiprocessor
  std::unique_ptr<std::remove_pointer_t<cudaStream_t>, StreamDeleter> stream_;  ///< before every buffer: freed last
  DeviceBuffer<float> params_, velocity_;
  std::vector<LayerBuffers> buffers_;
  DeviceBuffer<float> batch_, dense_partials_;  ///< the gathered batch; the dense forward's split sums
  DeviceBuffer<unsigned int> counters_;         ///< the dense forward's tickets, 0 between launches
  DeviceBuffer<int> batch_labels_, predictions_;
  DeviceBuffer<float> hyper_;              ///< {lr, momentum}
  std::array<float, 2> host_hyper_{};
  DeviceSums sums_, eval_sums_, scratch_sums_;
  std::map<int, std::unique_ptr<StepPlan>> plans_;
  DeviceEpoch epoch_;  ///< the training set, the epoch's order and the step counter, on the device
  EpochOrderAhead orders_;  ///< the next epoch's order, shuffled on the host while this epoch runs
  DeviceDataset eval_data_;

  StepGraph graph_;
  DataKey graph_key_;
  bool warmed_up_ = false;
  bool gpu_launches_early_ = false;  ///< the GPU is sm_90 or later (programmatic dependent launch, clusters)
  bool chain_fits_ = false;          ///< the model can run as the dense chain on this GPU
  long graph_replays_ = 0;

  // One full step's kernels as planned at construction, for step_table() and stage_results().
  std::vector<KernelTraffic> step_traffic_;
  std::vector<int> step_blocks_, step_smem_;
  KernelTraffic layerwise_;
  int persistent_grid_ = 0;

  GpuProfiler profiler_;  ///< one row per fused layer, then the gather and the update
  std::size_t gather_row_ = 0, sgd_row_ = 0, chain_row_ = 0, chain_update_row_ = 0;
  /// The dense chain's two phases of a step of B (plan_for).
  void add_dense_chain(StepPlan& plan, int B);
  bool recording_ = false;
};

}  // namespace course
