/// @file cnn.hpp
/// @brief Stage 02: the layer factory that lets stage 01's network, training loop and engine run CNNs.
///
/// Stage 01's Network<T> builds its layers through a LayerFactory, one spec
/// entry at a time. Stage 02 hands it make_cnn_layer(), which builds conv,
/// max-pool, average-pool and flatten layers itself and passes everything else (dense layers,
/// activations) to stage 01's make_dense_or_activation(). Nothing else changes:
///
/// @code
/// Network<float> net(parse_arch(named_model_spec("cnn")), {1, 28, 28}, 10, make_cnn_layer<float>);
/// net.init(seed);                                    // same initial weights as every stage
/// train_epoch(net, train, cfg, epoch, on_batch);     // stage 01's loop: forward, loss, backward, SGD
/// CpuEngine engine(cfg, make_cnn_layer<float>);      // what the stage 02 trainer runs
/// @endcode
///
/// Layer names count each kind from 1 (conv1, pool1, conv2, ..., avgpool1), so the
/// parameters are conv1.weight [C_out, C_in, K, K], conv1.bias [C_out], ...,
/// fc1.weight, ... in model order, as in every stage's model files.
#pragma once

#include <memory>
#include <string>

#include "01_fc_softmax/network.hpp"
#include "02_conv_pool/layers.hpp"
#include "common/model/arch.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

/// Makes the layer for one spec entry with input shape `in`; `index` counts
/// layers of the same kind from 1. A LayerFactory<T> for Network<T>.
template <typename T>
std::unique_ptr<Layer<T>> make_cnn_layer(const LayerSpec& spec, Shape3 in, int index) {
  // Average pooling came after Task 2.7 (its layer runs Task 2.8's functions): given here.
  if (spec.kind == LayerKind::AvgPool)
    return std::make_unique<AvgPoolLayer<T>>("avgpool" + std::to_string(index),
                                             PoolGeometry{in.c, in.h, in.w, spec.kernel, spec.stride, spec.pad});
  // TODO(Task 2.7): the CNN layer factory: conv, max-pool and flatten layers here, everything else from stage 01
  // HINT: a switch on spec.kind; a conv layer of spec (units filters, kernel, pad, stride) on input `in` is ConvGeometry{in.c, in.h, in.w, spec.units, spec.kernel, spec.pad, spec.stride}.
  // HINT: name the layers "conv" / "pool" / "flatten" + index; dense layers and activations: return make_dense_or_activation<T>(spec, in, index).
  throw course::NotImplemented("Task 2.7", "02_conv_pool/cnn.hpp", "docs/lessons/02_conv_pool.md");
}

}  // namespace course
