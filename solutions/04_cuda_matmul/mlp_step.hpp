/// @file mlp_step.hpp
/// @brief Stage 04: the MLP's training step on the GPU, batch by batch as GEMMs: the step model the GPU engine drives.
///
/// The engine (common/gpu/gpu_engine.hpp) gathers each batch on the device, keeps the
/// loss sums, the flat parameter, gradient and velocity buffers, the profiler and the
/// checkpoints; this step runs the layers on them. A training step is a fixed sequence of
/// kernel launches with no copy in between (forward, loss, backward, one SGD update), so
/// the host only queues work and the GPU runs the steps back to back.
///
/// | on the device, owned here                         | layout                          |
/// |---------------------------------------------------|---------------------------------|
/// | outputs_[i]: the output of layer i                | [batch, out_i]                  |
/// | output_grads_[i]: dL/d(output of layer i)         | [batch, out_i]; the last is dL/dlogits |
///
/// Layer i's weights W [out, in] start at params + weight, its bias b [out] at params + bias
/// (and alike in the gradient and velocity buffers).
#pragma once

#include <string>
#include <vector>

#include "04_cuda_matmul/gemm.hpp"
#include "common/model/arch.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/train/engine.hpp"
#include "common/gpu/step_model.hpp"

namespace course {

/// A dense network (dense layers and activations: the `mlp` model, or any `--layers`, with
/// leaky ReLU of any slope and a sigmoid output with --loss mse) as a GPU step.
class MlpStep : public StepModel {
 public:
  /// cfg's model with its matrix products on gemm kernel `gemm_kernel` (gemm.hpp). Touches no GPU.
  /// Throws std::invalid_argument for a convolution, pooling or flatten layer, a loss other
  /// than cross-entropy and mse, a kernel number out of range, or kernel 1 when its single
  /// block cannot hold the model's largest product at cfg.batch.
  explicit MlpStep(const EngineConfig& cfg, int gemm_kernel = kBestGemm);

  /// The gemm kernel this step uses.
  int gemm_kernel() const { return gemm_kernel_; }

  const ParamLayout& layout() const override { return layout_; }
  /// course::initial_parameters(cfg.arch, cfg.input, cfg.classes, cfg.seed): the weights every stage starts from.
  std::vector<NamedTensor> initial_parameters() const override;
  std::vector<std::string> layer_rows() const override;
  std::vector<GradientRange> gradient_ranges() const override;
  void allocate(int batch) override;

  // ---- Task 4.10 (mlp_step.cpp) ----
  const float* forward(const StepContext& ctx, const float* x, int B) override;
  void loss(const StepContext& ctx, const float* logits, const int* labels, int B, int* predictions) override;
  void backward(const StepContext& ctx, int B) override;
  void update(const StepContext& ctx) override;

 private:
  /// A layer as the step runs it: sizes are per example.
  struct Layer {
    LayerKind kind = LayerKind::Dense;
    Activation act = Activation::ReLU;
    float slope = 0.01f;               ///< leaky ReLU's (LayerSpec::slope)
    int in = 0, out = 0;               ///< input and output values per example
    std::size_t weight = 0, bias = 0;  ///< offsets of W [out, in] and b [out] in the flat buffers
    GradientRange grads;               ///< [weight, bias + out) with the layer's name; empty for activations
  };
  using Pass = GpuProfiler::Pass;

  /// Layer i's forward launches, from `in` [B, in] to outputs_[i] [B, out] (Task 4.10).
  void forward_layer(const StepContext& ctx, std::size_t i, const float* in, int B);
  /// Layer i's backward launches: its dW, db and dx (none for i = 0) from output_grads_[i] (Task 4.10).
  void backward_layer(const StepContext& ctx, std::size_t i, int B);

  EngineConfig cfg_;
  int gemm_kernel_;
  std::vector<Layer> layers_;
  ParamLayout layout_;  ///< the parameters' names ("fc1.weight", ...) and shapes, in model order
  std::vector<DeviceBuffer<float>> outputs_;       ///< [layer]: its output [batch, out]
  std::vector<DeviceBuffer<float>> output_grads_;  ///< [layer]: dL/d(its output) [batch, out]
  const float* input_ = nullptr;                   ///< x of the last forward()
};

}  // namespace course
