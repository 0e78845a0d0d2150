/// @file fused_plan.hpp
/// @brief Stage 08: which layers of a spec each fused kernel runs, and what a step reads and writes (glue, not a task).
///
/// The fused engine reads a spec left to right and cuts it into kernels:
///
/// | spec layers                                        | one kernel each way            |
/// |----------------------------------------------------|--------------------------------|
/// | `conv` (stride 1, 1x1, 3x3 or 5x5) [activation] [`pool2` or `pool1`] | a fused conv block |
/// | `flatten`                                          | nothing: a view (NCHW is already flat) |
/// | `fc` [activation] (not the last layer)             | a fused dense layer            |
/// | the last `fc`, with the loss                       | the softmax head               |
///
/// A spec that does not cut this way (an activation or a pool on its own, a
/// strided conv, a 7x7 kernel, an overlapping or padded pool) is refused with
/// std::invalid_argument naming the layer and why; stages 05 and 06 run any spec.
/// Stage 08 does not fall back to unfused kernels: its step is only what it fuses.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "08_fused/conv_block_shape.hpp"
#include "08_fused/fused_common.hpp"
#include "common/model/arch.hpp"

namespace course {

/// The layers one fused kernel runs (in each direction).
struct FusedLayer {
  enum class Kind { ConvBlock, Dense, Head };
  Kind kind = Kind::Dense;
  std::string name;    ///< stage 01's layer names joined: "conv1+relu1+pool1", "fc1+relu3", "fc2+loss"
  std::string tokens;  ///< their spec tokens: "conv16k3p1,relu,pool2"
  Shape3 in, out;      ///< one example's input and output
  ConvBlockShape conv{};           ///< Kind::ConvBlock
  FusedAct act = FusedAct::None;   ///< Kind::Dense
  std::size_t weight = 0, bias = 0;  ///< offsets of W and b in the flat parameter buffer (model order)
  std::size_t weight_count = 0, bias_count = 0;
};

/// The fused layers of `arch` on examples of shape `input`, with the parameter
/// offsets of stage 01's Network (the names and order of every stage's model
/// files). Throws std::invalid_argument for a spec that does not fit the input
/// (course::layer_shapes) or that stage 08 cannot fuse (the table above).
std::vector<FusedLayer> plan_fused_layers(const Arch& arch, Shape3 input, int classes);

/// The same step run layer by layer, as stages 05 and 06 run it at the least:
/// one kernel per layer and direction (plus gather, loss and update), each
/// reading its inputs and writing its output once, for a batch of B. (Stage
/// 06's libraries launch more kernels than that and move more: this is a floor.)
/// Counted as phase_traffic() (fused_phases.hpp) counts each kernel of a fused step.
KernelTraffic layerwise_traffic(const Arch& arch, Shape3 input, int classes, int B);

}  // namespace course
