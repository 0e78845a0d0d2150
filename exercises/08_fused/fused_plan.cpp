/// @file fused_plan.cpp
/// @brief Stage 08: cutting a spec into fused kernels, and the traffic of the same step layer by layer (glue, not a task).
#include "08_fused/fused_plan.hpp"

#include <stdexcept>
#include <string>

#include "01_fc_softmax/network.hpp"
#include "02_conv_pool/cnn.hpp"
#include "08_fused/softmax_xent.hpp"

namespace course {

namespace {

// "stage 08 cannot fuse layer 3 'pool2' of conv8k3p1,pool2,...: <why> (stages 05 and 06 run any spec)"
[[noreturn]] void refuse(const Arch& arch, std::size_t i, const std::string& why) {
  throw std::invalid_argument("stage 08 cannot fuse layer " + std::to_string(i + 1) + " '" +
                              arch.layers[i].token() + "' of " + arch.spec() + ": " + why +
                              " (stage 08 fuses conv (stride 1, 1x1, 3x3 or 5x5) + activation + max-pool 2, and "
                              "dense + activation; stages 05 and 06 run any spec)");
}

}  // namespace

std::vector<FusedLayer> plan_fused_layers(const Arch& arch, Shape3 input, int classes) {
  // Stage 01's Network (with stage 02's layers) names the layers and lays out the
  // parameters as every stage's model files do; it is built here for that alone.
  Network<float> net(arch, input, classes, make_cnn_layer<float>);
  const auto& layers = net.layers();
  std::vector<std::size_t> weight_at(layers.size(), 0);
  std::size_t offset = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    weight_at[i] = offset;
    for (Param<float>* p : layers[i]->params()) offset += p->value.size();
  }

  std::vector<FusedLayer> out;
  Shape3 in = input;
  const std::size_t L = arch.layers.size();
  // What the fused kernels have no room for: an activation between the last dense layer and the
  // loss, and a leaky ReLU slope other than the one fused_common.cuh compiles in.
  if (output_activation(arch))
    refuse(arch, L - 1, "the fused head feeds the last dense layer's outputs straight into the loss, with no output "
                        "activation between them (--output sigmoid runs on every other stage)");
  for (std::size_t i = 0; i < L; ++i)
    if (arch.layers[i].kind == LayerKind::Activation && arch.layers[i].act == Activation::LeakyReLU &&
        arch.layers[i].slope != kLeakySlope)
      refuse(arch, i, "the fused kernels apply leaky ReLU with the slope " + slope_text(kLeakySlope) +
                          " compiled in (--leaky-slope runs on every other stage)");
  for (std::size_t i = 0; i < L;) {
    const LayerSpec& spec = arch.layers[i];
    FusedLayer f;
    f.in = in;
    f.name = layers[i]->name();
    f.tokens = spec.token();
    std::size_t next = i + 1;
    auto take = [&](std::size_t j) {  // layer j joins the kernel
      f.name += "+" + layers[j]->name();
      f.tokens += "," + arch.layers[j].token();
      next = j + 1;
    };
    switch (spec.kind) {
      case LayerKind::Flatten:  // a view: the next layer reads the same bytes
        in = layers[i]->out_shape();
        i = next;
        continue;
      case LayerKind::Activation:
        refuse(arch, i, "an activation must follow a conv or dense layer, which applies it in its epilogue");
      case LayerKind::MaxPool:
        refuse(arch, i, "a max-pool must follow a conv layer (and its activation), which pools in its epilogue");
      case LayerKind::AvgPool:
        refuse(arch, i, "the fused conv block pools with max only; average pooling runs on the GPU in stages 05, "
                        "06 and 07 (and on the CPU in stages 02 and 03)");
      case LayerKind::Conv: {
        if (spec.stride != 1) refuse(arch, i, "its stride is " + std::to_string(spec.stride) + ", not 1");
        if (spec.kernel != 1 && spec.kernel != 3 && spec.kernel != 5)
          refuse(arch, i, "its kernel is " + std::to_string(spec.kernel) + "x" + std::to_string(spec.kernel));
        FusedAct act = FusedAct::None;
        int Q = 1;
        if (next < L && arch.layers[next].kind == LayerKind::Activation) {
          act = fused_act(arch.layers[next].act);
          take(next);
        }
        if (next < L && arch.layers[next].kind == LayerKind::MaxPool) {
          const LayerSpec& pool = arch.layers[next];
          if (pool.kernel != pool.stride || pool.pad != 0 || pool.kernel > 2)
            refuse(arch, next, "the fused conv block pools 2x2 windows with stride 2 and no padding");
          Q = pool.kernel;
          take(next);
        }
        f.kind = FusedLayer::Kind::ConvBlock;
        f.conv = make_conv_block_shape(in.c, in.h, in.w, spec.units, spec.kernel, spec.pad, Q, act);
        break;
      }
      case LayerKind::Dense:
        if (i + 1 == L) {
          if (spec.units > kHeadMaxClasses)
            refuse(arch, i, "it has " + std::to_string(spec.units) + " outputs, and the softmax head keeps a row's " +
                                "logits in registers: at most " + std::to_string(kHeadMaxClasses));
          f.kind = FusedLayer::Kind::Head;
          f.name += "+loss";
        } else {
          f.kind = FusedLayer::Kind::Dense;
          if (arch.layers[next].kind == LayerKind::Activation) {
            f.act = fused_act(arch.layers[next].act);
            take(next);
          }
        }
        break;
    }
    const auto params = layers[i]->params();  // weight, then bias
    f.weight = weight_at[i];
    f.weight_count = params[0]->value.size();
    f.bias = f.weight + f.weight_count;
    f.bias_count = params[1]->value.size();
    f.out = layers[next - 1]->out_shape();
    in = f.out;
    out.push_back(f);
    i = next;
  }
  return out;
}

KernelTraffic layerwise_traffic(const Arch& arch, Shape3 input, int classes, int B) {
  KernelTraffic t;
  t.kernel = "layer by layer";
  const std::vector<Shape3> shapes = layer_shapes(arch, input, classes);
  const long long b = B;
  long long params = 0;
  int kernels = 1;  // the gather
  t.bytes_read = float_bytes(b * input.size()) + 8 * b;
  t.bytes_written = float_bytes(b * input.size()) + 4 * b;
  Shape3 in = input;
  for (std::size_t i = 0; i < arch.layers.size(); ++i) {
    const LayerSpec& l = arch.layers[i];
    const Shape3 out = shapes[i];
    const long long x = b * in.size(), y = b * out.size();
    long long w = 0;
    if (l.kind == LayerKind::Conv) w = static_cast<long long>(l.units) * in.c * l.kernel * l.kernel + l.units;
    if (l.kind == LayerKind::Dense) w = in.size() * static_cast<long long>(l.units) + l.units;
    params += w;
    const bool first = i == 0;
    switch (l.kind) {
      case LayerKind::Flatten: break;  // a view in every GPU stage
      case LayerKind::Conv:
      case LayerKind::Dense:
        // forward: x, W, b -> y; backward: dy, x, W -> dW, db (and dx but for the first layer)
        kernels += 2;
        t.bytes_read += float_bytes(x + w) + float_bytes(y + x + w);
        t.bytes_written += float_bytes(y) + float_bytes(w + (first ? 0 : x));
        break;
      case LayerKind::Activation:
        // forward: x -> y; backward: dy, x or y -> dx
        kernels += first ? 1 : 2;
        t.bytes_read += float_bytes(x) + (first ? 0 : float_bytes(2 * y));
        t.bytes_written += float_bytes(y) + (first ? 0 : float_bytes(x));
        break;
      case LayerKind::MaxPool:
        // forward: x -> y, argmax (int); backward: dy, argmax -> dx
        kernels += first ? 1 : 2;
        t.bytes_read += float_bytes(x) + (first ? 0 : float_bytes(2 * y));
        t.bytes_written += float_bytes(2 * y) + (first ? 0 : float_bytes(x));
        break;
      case LayerKind::AvgPool:
        // forward: x -> y; backward: dy -> dx (nothing recorded)
        kernels += first ? 1 : 2;
        t.bytes_read += float_bytes(x) + (first ? 0 : float_bytes(y));
        t.bytes_written += float_bytes(y) + (first ? 0 : float_bytes(x));
        break;
    }
    in = out;
  }
  // the loss: logits and labels -> dlogits, and the update: w, g, v -> w, v
  kernels += 2;
  t.bytes_read += float_bytes(2 * b * classes) + float_bytes(3 * params);
  t.bytes_written += float_bytes(b * classes) + float_bytes(2 * params);
  t.launches = kernels;
  return t;
}

}  // namespace course
