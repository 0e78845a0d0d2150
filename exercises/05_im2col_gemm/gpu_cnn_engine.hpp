/// @file gpu_cnn_engine.hpp
/// @brief Stage 05: the engine the shared trainer drives: CNNs (and MLPs) trained on the GPU.
///
/// Every layer of a spec runs on the device: conv as im2col + GEMMs
/// (conv_gpu.hpp), max-pool and average-pool (pool_gpu.hpp), flatten as a view, and stage 04's
/// dense layers, activations, loss, SGD update and batch gather (mlp_kernels.hpp)
/// unchanged. As in stage 04:
///
/// | on the device                                  | moved to / from the host           |
/// |------------------------------------------------|------------------------------------|
/// | the training and test sets (images, labels)    | uploaded once, on first use        |
/// | every parameter, gradient and velocity, each in one flat buffer | parameters: at start, and on get/set_parameters |
/// | activations, their gradients, pool arg-maxes, the im2col workspace | never               |
/// | the epoch's shuffled order of examples         | uploaded once per epoch            |
/// | the epoch's loss sum and correct count         | read once per epoch; the loss sum also copied back after every step, read a few steps late (the NaN check) |
///
/// Flatten is a view: in NCHW an example [C, H, W] already lies in memory as
/// the vector [C*H*W] the next dense layer reads, so the flatten layer's
/// output *is* its input (the same pointer) and its input gradient *is* its
/// output gradient. It launches nothing and copies nothing.
///
/// The conv layers share one im2col workspace (they run one after another),
/// sized for the largest layer: workspace_bytes(), and conv_memory() per layer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "02_conv_pool/conv.hpp"
#include "02_conv_pool/pool.hpp"
#include "04_cuda_matmul/gemm.hpp"
#include "common/gpu/engine_parts.hpp"
#include "05_im2col_gemm/conv_gpu.hpp"
#include "05_im2col_gemm/split_k.hpp"
#include "common/arch.hpp"
#include "common/cuda_check.hpp"
#include "common/engine.hpp"
#include "common/epoch_order_ahead.hpp"

namespace course {

/// The stage's own switches (the trainer's --kernel, --unroll and --split-k).
struct GpuCnnOptions {
  int gemm_kernel = kBestGemm;    ///< stage 04's kernel for every matrix product (0 = cuBLAS)
  Unroll unroll = Unroll::Batch;  ///< how conv layers unroll their input
  int split_k = kDefaultSplitK;   ///< most chunks of a batch weight gradient (1 = one GEMM)
};

/// Memory of one conv layer's unrolled input, for the lesson's table.
struct ConvMemory {
  std::string layer;               ///< "conv2 (conv32k3p1)"
  ConvGeometry geometry;
  long input_floats = 0;           ///< C_in * H * W per image
  long unrolled_floats = 0;        ///< Ho*Wo * C_in*K*K per image: the rows of U
  std::size_t workspace_floats = 0;///< what this layer needs at the engine's batch and unroll
};

/// Trains any spec of conv, max-pool, average-pool, flatten, dense and activation layers on the GPU.
class GpuCnnEngine : public Engine {
 public:
  /// Builds cfg's model on the GPU, starting from `initial` (tensors in model order,
  /// as course::initial_parameters() returns them); when `initial` is empty, from
  /// initial_parameters(cfg.arch, cfg.input, cfg.classes, cfg.seed, make_cnn_layer<float>),
  /// the weights every stage starts from.
  ///
  /// Throws std::invalid_argument, before touching the GPU, for a spec that does not
  /// fit the input, a loss other than cross-entropy and mse, a kernel number out of
  /// range (or kernel 1, whose single block cannot hold this model's products), or
  /// split_k < 1; course::GpuError when the GPU cannot be used.
  explicit GpuCnnEngine(const EngineConfig& cfg, const GpuCnnOptions& options = {},
                        const std::vector<NamedTensor>& initial = {});
  GpuCnnEngine(const GpuCnnEngine&) = delete;
  GpuCnnEngine& operator=(const GpuCnnEngine&) = delete;

  /// course::gpu_name(), e.g. "NVIDIA H100 80GB HBM3 (sm_90)".
  std::string device() const override;
  /// Read by every SGD step that follows.
  void set_learning_rate(double lr) override { cfg_.lr = lr; }
  /// One epoch: begin_epoch(), train_batch() for every batch, end_epoch().
  /// `on_batch` gets NaN for the loss, which stays on the device; a NaN or Inf loss
  /// throws NonFiniteLoss a few steps later (train_epoch_in_batches()).
  EpochStats train_epoch(const Dataset& train, int epoch, const BatchCallback& on_batch) override;
  EpochStats evaluate(const Dataset& data, std::vector<int>* predictions) override;
  std::vector<NamedTensor> get_parameters() override;
  void set_parameters(const std::vector<NamedTensor>& params) override;
  /// The SGD velocity of every parameter, in model order ("conv1.weight.velocity", ...), for checkpoints.
  std::vector<NamedTensor> get_optimizer_state() override;
  void set_optimizer_state(const std::vector<NamedTensor>& state) override;
  /// With EngineConfig::profile: GPU time of every layer's forward and backward
  /// (CUDA events around each), plus rows for the batch gather, the loss and the SGD update.
  std::vector<LayerTime> layer_times() const override { return profiler_.times(); }
  void reset_layer_times() override;
  /// With --loss mse the loss also adds up the absolute errors (stage 04's absolute_error_gpu).
  bool reports_mae() const override { return true; }

  /// The parameter tensors of cfg's model, named and shaped as this engine (and every
  /// stage) names them, all zero; touches no GPU. Throws std::invalid_argument like the constructor.
  static std::vector<NamedTensor> model_parameters(const EngineConfig& cfg);

  const GpuCnnOptions& options() const { return options_; }
  /// Bytes of the shared im2col workspace (0 for a model without conv layers).
  std::size_t workspace_bytes() const { return workspace_.size() * sizeof(float); }
  /// Every conv layer's input and unrolled size, and its own workspace need.
  std::vector<ConvMemory> conv_memory() const;
  /// Split-K chunks of the largest batch weight gradient (1: no split).
  int split_k_chunks_used() const;
  /// The run's GEMM kernel, unroll, split-K and im2col memory per conv layer, for the
  /// --json file: {"gemm_kernel", "gemm", "unroll", "split_k_max", "split_k_chunks",
  /// "workspace_bytes", "conv_layers": [{"layer", "input_floats_per_image", ...}]}.
  nlohmann::json stage_results() const override;

  // ---- the pieces of train_epoch(), public for the benchmarks and tests ----

  /// Uploads `train` (the first time it is seen) and the example order of
  /// `epoch` (course::epoch_order), and zeroes the epoch's loss sum and count.
  void begin_epoch(const Dataset& train, int epoch);
  /// Batches in the current epoch.
  int num_batches() const;
  /// Queues one SGD step on batch b of the current epoch and returns without
  /// waiting for the GPU (with profiling on, it waits, to read the timers).
  void train_batch(int b);
  /// Waits for the GPU and returns the epoch's sums (one copy to the host).
  EpochStats end_epoch();

 private:
  /// A layer as the engine runs it.
  struct GpuLayer {
    LayerKind kind = LayerKind::Dense;
    Activation act = Activation::ReLU;
    float slope = 0.01f;               ///< leaky ReLU's (LayerSpec::slope)
    std::string name;                  ///< "conv1", "relu2", "fc1", ...
    std::string token;                 ///< its spec token, "conv16k3p1"
    Shape3 in, out;                    ///< per example
    ConvGeometry conv;                 ///< Conv layers
    PoolGeometry pool;                 ///< MaxPool and AvgPool layers
    std::size_t weight = 0, bias = 0;  ///< offsets of W and b in the parameter buffers (Dense, Conv)
    DeviceBuffer<float> output;        ///< [batch, out] (empty for Flatten, whose output is its input)
    DeviceBuffer<float> output_grad;   ///< [batch, out]: dL/d(output) (empty for Flatten, see output_grads_)
    DeviceBuffer<int> argmax;          ///< MaxPool: [batch, out]
  };
  using Pass = GpuProfiler::Pass;

  /// The layers of cfg's model with their geometries and parameter offsets (no device
  /// memory yet), the parameters' names and shapes in model order; returns the parameter count.
  static std::size_t plan_layers(const EngineConfig& cfg, std::vector<GpuLayer>* layers,
                                 std::vector<std::string>* names, std::vector<std::vector<int>>* shapes);
  void build_layers();
  void allocate();
  ConvContext conv_context();
  const float* forward(const float* x, int B);
  void backward(int B);
  void loss(const float* logits, const int* labels, int B, float* dlogits, int* predictions);
  /// Runs `work`, timed for --profile as row `row`, pass `pass`, inside a profiled step.
  template <typename Work>
  void timed(std::size_t row, Pass pass, Work&& work) {
    profiler_.time(row, pass, recording_, 0, work);
  }

  EngineConfig cfg_;
  GpuCnnOptions options_;
  std::vector<GpuLayer> layers_;
  ParamLayout layout_;  ///< the parameters' names and shapes, in model order
  std::size_t param_count_ = 0;
  DeviceBuffer<float> params_, grads_, velocity_;
  DeviceBuffer<float> batch_;              ///< the gathered batch [batch, D]
  std::vector<const float*> outputs_;      ///< outputs_[i]: output of layer i in the last forward() (its input for Flatten)
  /// output_grads_[i]: where dL/d(output of layer i) lives. Layer i's own buffer, but for
  /// Flatten the buffer of the layer before (its input gradient is its output gradient),
  /// and null for Flatten layers at the very start (nothing needs dL/dinput).
  std::vector<float*> output_grads_;
  const float* input_ = nullptr;           ///< the input of the last forward()
  std::unique_ptr<SplitKGemm> split_k_;    ///< Unroll::Batch with a hand-written GEMM
  DeviceBuffer<float> workspace_;          ///< the im2col workspace every conv layer shares
  DeviceBuffer<int> batch_labels_;
  DeviceBuffer<int> order_;
  EpochOrderAhead orders_;  ///< the next epoch's order, shuffled on the host while this epoch runs
  DeviceSums sums_;  ///< the loss sum and correct count of the running epoch or evaluation
  DeviceBuffer<int> predictions_;
  DeviceDataset train_data_, eval_data_;
  const DeviceDataset* epoch_data_ = nullptr;
  int epoch_size_ = 0;

  GpuProfiler profiler_;  ///< one row per layer, then gather, loss, SGD
  std::size_t gather_row_ = 0, loss_row_ = 0, sgd_row_ = 0;
  bool recording_ = false;
};

}  // namespace course
