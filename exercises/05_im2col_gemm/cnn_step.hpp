/// @file cnn_step.hpp
/// @brief Stage 05: CNNs (and MLPs) trained on the GPU: the step model the GPU engine drives.
///
/// Every layer of a spec runs on the device: conv as im2col + GEMMs (conv_gpu.hpp),
/// max-pool and average-pool (pool_gpu.hpp), flatten as a view, and stage 04's dense
/// layers, activations, loss and SGD update (mlp_kernels.hpp) unchanged. The engine
/// (common/gpu/gpu_engine.hpp) gathers each batch, keeps the sums, the flat parameter,
/// gradient and velocity buffers, the profiler and the checkpoints.
///
/// | on the device, owned here                               | layout                  |
/// |---------------------------------------------------------|-------------------------|
/// | each layer's output and dL/d(output)                    | [batch, C, H, W]        |
/// | each max-pool's arg-maxes                               | [batch, C, Ho, Wo]      |
/// | the im2col workspace every conv layer shares            | the largest layer's need |
///
/// Flatten is a view: in NCHW an example [C, H, W] already lies in memory as
/// the vector [C*H*W] the next dense layer reads, so the flatten layer's
/// output *is* its input (the same pointer) and its input gradient *is* its
/// output gradient. It launches nothing and copies nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "02_conv_pool/conv.hpp"
#include "02_conv_pool/pool.hpp"
#include "04_cuda_matmul/gemm.hpp"
#include "05_im2col_gemm/conv_gpu.hpp"
#include "05_im2col_gemm/split_k.hpp"
#include "common/model/arch.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/train/engine.hpp"
#include "common/gpu/step_model.hpp"

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
  std::size_t workspace_floats = 0;///< what this layer needs at the step's batch and unroll
};

/// Any spec of conv, max-pool, average-pool, flatten, dense and activation layers as a GPU step.
class CnnStep : public StepModel {
 public:
  /// cfg's model on `options`. Touches no GPU. Throws std::invalid_argument for a spec that
  /// does not fit the input, a loss other than cross-entropy and mse, a batch below 1, a
  /// kernel number out of range (or kernel 1, whose single block cannot hold this model's
  /// products), or split_k < 1.
  explicit CnnStep(const EngineConfig& cfg, const GpuCnnOptions& options = {});

  /// The parameter tensors of cfg's model, named and shaped as every stage names them,
  /// all zero; touches no GPU. Throws std::invalid_argument like the constructor.
  static std::vector<NamedTensor> model_parameters(const EngineConfig& cfg);

  const GpuCnnOptions& options() const { return options_; }
  /// Bytes of the shared im2col workspace (0 before allocate() and for a model without conv layers).
  std::size_t workspace_bytes() const { return workspace_.size() * sizeof(float); }
  /// Every conv layer's input and unrolled size, and its own workspace need at cfg.batch.
  std::vector<ConvMemory> conv_memory() const;
  /// Split-K chunks of the largest batch weight gradient (1: no split).
  int split_k_chunks_used() const;
  /// The run's GEMM kernel, unroll, split-K and im2col memory per conv layer, for the
  /// --json file: {"gemm_kernel", "gemm", "unroll", "split_k_max", "split_k_chunks",
  /// "workspace_bytes", "conv_layers": [{"layer", "input_floats_per_image", ...}]}.
  nlohmann::json stage_results() const override;

  const ParamLayout& layout() const override { return layout_; }
  /// course::initial_parameters(..., make_cnn_layer<float>): the weights every stage starts from.
  std::vector<NamedTensor> initial_parameters() const override;
  std::vector<std::string> layer_rows() const override;
  std::vector<GradientRange> gradient_ranges() const override;
  void allocate(int batch) override;

  // ---- Task 5.9 (cnn_step.cpp) ----
  const float* forward(const StepContext& ctx, const float* x, int B) override;
  void loss(const StepContext& ctx, const float* logits, const int* labels, int B, int* predictions) override;
  void backward(const StepContext& ctx, int B) override;
  void update(const StepContext& ctx) override;

 private:
  /// A layer as the step runs it.
  struct GpuLayer {
    LayerKind kind = LayerKind::Dense;
    Activation act = Activation::ReLU;
    float slope = 0.01f;               ///< leaky ReLU's (LayerSpec::slope)
    std::string name;                  ///< "conv1", "relu2", "fc1", ...
    std::string token;                 ///< its spec token, "conv16k3p1"
    Shape3 in, out;                    ///< per example
    ConvGeometry conv;                 ///< Conv layers
    PoolGeometry pool;                 ///< MaxPool and AvgPool layers
    std::size_t weight = 0, bias = 0;  ///< offsets of W and b in the flat buffers (Dense, Conv)
    GradientRange grads;               ///< [weight, end of b) with the layer's name; empty without parameters
    DeviceBuffer<float> output;        ///< [batch, out] (empty for Flatten, whose output is its input)
    DeviceBuffer<float> output_grad;   ///< [batch, out]: dL/d(output) (empty for Flatten, see output_grads_)
    DeviceBuffer<int> argmax;          ///< MaxPool: [batch, out]
  };
  using Pass = GpuProfiler::Pass;

  /// The layers of cfg's model with their geometries and parameter offsets (no device
  /// memory yet), the parameters' names and shapes in model order.
  static void plan_layers(const EngineConfig& cfg, std::vector<GpuLayer>* layers, ParamLayout* layout);
  void refuse_single_block_overflow() const;
  ConvContext conv_context(cudaStream_t stream);
  /// Layer i's forward launches, from `in` to its output buffer (Task 5.9); not called for Flatten.
  void forward_layer(const StepContext& ctx, const ConvContext& conv, std::size_t i, const float* in, int B);
  /// Layer i's backward launches: its dW and db, and dx into output_grads_[i - 1] unless i = 0 (Task 5.9).
  void backward_layer(const StepContext& ctx, const ConvContext& conv, std::size_t i, int B);

  EngineConfig cfg_;
  GpuCnnOptions options_;
  std::vector<GpuLayer> layers_;
  ParamLayout layout_;  ///< the parameters' names and shapes, in model order
  /// outputs_[i]: output of layer i in the last forward() (its input for Flatten)
  std::vector<const float*> outputs_;
  /// output_grads_[i]: where dL/d(output of layer i) lives. Layer i's own buffer, but for
  /// Flatten the buffer of the layer before (its input gradient is its output gradient),
  /// and null for Flatten layers at the very start (nothing needs dL/dinput).
  std::vector<float*> output_grads_;
  const float* input_ = nullptr;         ///< x of the last forward()
  std::unique_ptr<SplitKGemm> split_k_;  ///< Unroll::Batch with a hand-written GEMM
  DeviceBuffer<float> workspace_;        ///< the im2col workspace every conv layer shares
};

}  // namespace course
