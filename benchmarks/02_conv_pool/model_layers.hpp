// The conv and max-pool layers of a named model, with the names every stage's
// benchmarks give them: conv1, conv2, ... and pool1, pool2, ... in model order.
// Only common/model/arch.hpp is needed, so later stages include this file and
// register "BM_ConvForward/conv2" for exactly the same shape as stage 02.
#pragma once

#include <string>
#include <vector>

#include "common/model/arch.hpp"

namespace course::bench {

/// One conv layer: input [C_in, H, W] per example, C_out filters of K x K, padding P, stride S.
struct ConvLayerShape {
  std::string name;  ///< "conv1"
  int C_in, H, W, C_out, K, P, S;
  /// Multiply-adds of the forward pass per example, times 2: the FLOPs of one pass.
  double flops_per_example() const {
    const int Ho = (H + 2 * P - K) / S + 1, Wo = (W + 2 * P - K) / S + 1;
    return 2.0 * C_out * Ho * Wo * C_in * K * K;
  }
};

/// One max-pool layer: planes [C, H, W], a K x K window, stride S, padding P.
struct PoolLayerShape {
  std::string name;  ///< "pool1"
  int C, H, W, K, S, P;
};

/// The conv and pool layers of `model` (course::named_model_spec) on examples of shape `input`.
inline void model_layers(const std::string& model, Shape3 input, int classes, std::vector<ConvLayerShape>* convs,
                         std::vector<PoolLayerShape>* pools) {
  const Arch arch = parse_arch(named_model_spec(model));
  const std::vector<Shape3> out = layer_shapes(arch, input, classes);
  Shape3 in = input;
  for (std::size_t i = 0; i < arch.layers.size(); ++i) {
    const LayerSpec& l = arch.layers[i];
    if (l.kind == LayerKind::Conv)
      convs->push_back({"conv" + std::to_string(convs->size() + 1), in.c, in.h, in.w, l.units, l.kernel, l.pad,
                        l.stride});
    if (l.kind == LayerKind::MaxPool)
      pools->push_back({"pool" + std::to_string(pools->size() + 1), in.c, in.h, in.w, l.kernel, l.stride, l.pad});
    in = out[i];
  }
}

}  // namespace course::bench
