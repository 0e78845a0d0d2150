/// @file mlp_model.cpp
/// @brief Stage 04: the MLP step's layers, parameter layout and device memory (glue, not a task).
#include <algorithm>
#include <stdexcept>
#include <string>

#include "01_fc_softmax/network.hpp"
#include "04_cuda_matmul/mlp_step.hpp"
#include "common/core/rng.hpp"

namespace course {

MlpStep::MlpStep(const EngineConfig& cfg, int gemm_kernel) : cfg_(cfg), gemm_kernel_(gemm_kernel) {
  gemm_kernel_name(gemm_kernel);  // throws std::invalid_argument for a number out of range
  check_step_config(cfg, "stage 04");
  for (std::size_t i = 0; i < cfg.arch.layers.size(); ++i) {
    const LayerSpec& l = cfg.arch.layers[i];
    if (l.kind != LayerKind::Dense && l.kind != LayerKind::Activation)
      throw std::invalid_argument("layer " + std::to_string(i + 1) + " '" + l.token() +
                                  "': stage 04 trains dense networks (fc layers and activations) on the GPU; "
                                  "its GEMMs do not run convolution, pooling or flatten layers");
  }

  // The layers, names and parameter layout, from stage 01's Network (built on the
  // host for its bookkeeping only; its weights are not initialised).
  Network<float> net(cfg.arch, cfg.input, cfg.classes);
  std::size_t offset = 0;
  Shape3 in = cfg.input;
  for (std::size_t i = 0; i < net.layers().size(); ++i) {
    const auto& layer = *net.layers()[i];
    Layer g;
    g.kind = cfg.arch.layers[i].kind;
    g.act = cfg.arch.layers[i].act;
    g.slope = static_cast<float>(cfg.arch.layers[i].slope);
    g.in = static_cast<int>(in.size());
    g.out = static_cast<int>(layer.out_shape().size());
    g.grads.name = layer.name() + " (" + layer.token() + ")";
    if (g.kind == LayerKind::Dense) {
      g.weight = offset;
      g.bias = offset + static_cast<std::size_t>(g.out) * g.in;
      offset = g.bias + static_cast<std::size_t>(g.out);
      g.grads.begin = g.weight;
      g.grads.end = offset;
    }
    layers_.push_back(g);
    in = layer.out_shape();
  }
  for (Param<float>* p : net.params()) {
    layout_.names.push_back(p->name);
    layout_.shapes.push_back(p->value.shape);
  }
  if (gemm_kernel == kGemmSingleBlock) {
    // Refused now rather than at the first batch: the largest product of the model
    // (Y, dW or dX of some layer) must fit in one block of threads.
    long largest = 0;
    for (const Layer& l : layers_)
      if (l.kind == LayerKind::Dense)
        largest = std::max({largest, static_cast<long>(cfg.batch) * l.out, static_cast<long>(l.out) * l.in,
                            static_cast<long>(cfg.batch) * l.in});
    if (largest > kMaxThreadsPerBlock)
      throw std::invalid_argument("gemm kernel 1 (single block) computes at most " +
                                  std::to_string(kMaxThreadsPerBlock) +
                                  " outputs per product, and this model at batch " + std::to_string(cfg.batch) +
                                  " needs " + std::to_string(largest) + ": use --kernel 2 or later");
  }
}

std::vector<NamedTensor> MlpStep::initial_parameters() const {
  return course::initial_parameters(cfg_.arch, cfg_.input, cfg_.classes, cfg_.seed);
}

std::vector<std::string> MlpStep::layer_rows() const { return rows_named_by_grads(layers_); }

std::vector<GradientRange> MlpStep::gradient_ranges() const { return ranges_last_layer_first(layers_); }

void MlpStep::allocate(int batch) {
  outputs_.resize(layers_.size());
  output_grads_.resize(layers_.size());
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    outputs_[i].resize(static_cast<std::size_t>(batch) * static_cast<std::size_t>(layers_[i].out));
    output_grads_[i].resize(outputs_[i].size());
  }
}

}  // namespace course
