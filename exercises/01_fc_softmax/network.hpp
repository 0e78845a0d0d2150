/// @file network.hpp
/// @brief Stage 01: layers as objects and a network that runs them in order.
///
/// This file is glue, not a task: it wires the functions of dense.hpp and
/// activations.hpp into layers that own their parameters and gradients, so a
/// network of any depth can be built from an architecture spec. A later stage adds
/// conv, pool and flatten layers through the same Layer interface.
///
/// Activations between layers are [B, C, H, W] (or [B, D] for vectors), the
/// same layout every stage uses.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "01_fc_softmax/activations.hpp"
#include "01_fc_softmax/dense.hpp"
#include "01_fc_softmax/init.hpp"
#include "common/model/arch.hpp"
#include "common/train/engine.hpp"
#include "common/core/rng.hpp"
#include "common/core/tensor.hpp"

namespace course {

/// A trainable tensor with its gradient and its SGD velocity (same shape).
template <typename T>
struct Param {
  std::string name;  ///< "fc1.weight"
  TensorT<T> value, grad, velocity;
  explicit Param(std::string n, std::vector<int> shape)
      : name(std::move(n)), value(shape), grad(shape), velocity(shape) {}
};

/// One layer: forward, backward, and the parameters it owns.
template <typename T>
class Layer {
 public:
  virtual ~Layer() = default;
  /// "fc1", "relu2", "conv1"
  virtual std::string name() const = 0;
  /// The spec token, e.g. "fc256".
  virtual std::string token() const = 0;
  /// Shape of one example of the output.
  virtual Shape3 out_shape() const = 0;
  /// x [B, in_shape] -> y [B, out_shape]
  virtual void forward(const T* x, T* y, int B) = 0;
  /// dy [B, out_shape] -> dx [B, in_shape] (dx may be null); parameter gradients
  /// are overwritten. x and y are the tensors of the last forward().
  virtual void backward(const T* x, const T* y, const T* dy, T* dx, int B) = 0;
  /// Parameters in a fixed order (weight, then bias).
  virtual std::vector<Param<T>*> params() { return {}; }
  /// Inputs per output unit, for He initialisation (0 for layers without weights).
  virtual int fan_in() const { return 0; }
};

/// Dense layer: weight [OUT, IN], bias [OUT]. Any input shape is read as a flat vector.
template <typename T>
class DenseLayer : public Layer<T> {
 public:
  DenseLayer(const std::string& name, int in, int out)
      : name_(name), in_(in), out_(out), W_(name + ".weight", {out, in}), b_(name + ".bias", {out}) {}
  std::string name() const override { return name_; }
  std::string token() const override { return "fc" + std::to_string(out_); }
  Shape3 out_shape() const override { return {out_, 1, 1}; }
  void forward(const T* x, T* y, int B) override { dense_forward(x, W_.value.ptr(), b_.value.ptr(), y, B, in_, out_); }
  void backward(const T* x, const T*, const T* dy, T* dx, int B) override {
    dense_backward(x, W_.value.ptr(), dy, W_.grad.ptr(), b_.grad.ptr(), dx, B, in_, out_);
  }
  std::vector<Param<T>*> params() override { return {&W_, &b_}; }
  int fan_in() const override { return in_; }

 private:
  std::string name_;
  int in_, out_;
  Param<T> W_, b_;
};

/// Element-wise activation layer; keeps the shape. `slope` is leaky ReLU's.
template <typename T>
class ActivationLayer : public Layer<T> {
 public:
  ActivationLayer(const std::string& name, Activation f, Shape3 shape, double slope = kLeakySlope)
      : name_(name), f_(f), shape_(shape), slope_(slope) {}
  std::string name() const override { return name_; }
  std::string token() const override {
    LayerSpec spec;
    spec.kind = LayerKind::Activation;
    spec.act = f_;
    spec.slope = slope_;
    return spec.token();  // "leaky0.1" for another slope than the default
  }
  Shape3 out_shape() const override { return shape_; }
  void forward(const T* x, T* y, int B) override { activation_forward(f_, x, y, B * shape_.size(), slope_); }
  void backward(const T* x, const T* y, const T* dy, T* dx, int B) override {
    if (dx) activation_backward(f_, x, y, dy, dx, B * shape_.size(), slope_);
  }

 private:
  std::string name_;
  Activation f_;
  Shape3 shape_;
  double slope_;
};

/// Makes the layer for one spec entry. `in` is the shape of its input and
/// `index` counts layers of the same kind from 1 (fc1, fc2, ...).
template <typename T>
using LayerFactory = std::function<std::unique_ptr<Layer<T>>(const LayerSpec& spec, Shape3 in, int index)>;

/// Stage 01's layers: dense and the activations. Anything else is refused.
template <typename T>
std::unique_ptr<Layer<T>> make_dense_or_activation(const LayerSpec& spec, Shape3 in, int index) {
  switch (spec.kind) {
    case LayerKind::Dense:
      return std::make_unique<DenseLayer<T>>("fc" + std::to_string(index), static_cast<int>(in.size()), spec.units);
    case LayerKind::Activation:
      return std::make_unique<ActivationLayer<T>>(activation_name(spec.act) + std::to_string(index), spec.act, in,
                                                  spec.slope);
    default:
      throw std::invalid_argument("layer '" + spec.token() +
                                  "' is not part of stage 01 (dense layers and activations only); "
                                  "convolution and pooling arrive in a later stage");
  }
}

/// A sequence of layers with the buffers between them.
///
/// acts_[0] is the input batch, acts_[i + 1] the output of layer i; grads_[i]
/// is dL/dacts_[i]. The buffers grow to the largest batch seen.
template <typename T>
class Network {
 public:
  Network(const Arch& arch, Shape3 input, int classes, const LayerFactory<T>& make = make_dense_or_activation<T>)
      : input_(input), classes_(classes) {
    const std::vector<Shape3> shapes = layer_shapes(arch, input, classes);
    std::map<std::string, int> counts;  // layers of each kind so far: fc1, fc2, relu1, ...
    Shape3 in = input;
    for (std::size_t i = 0; i < arch.layers.size(); ++i) {
      const LayerSpec& spec = arch.layers[i];
      const std::string kind = spec.kind == LayerKind::Activation ? activation_name(spec.act)
                                                                   : std::to_string(static_cast<int>(spec.kind));
      layers_.push_back(make(spec, in, ++counts[kind]));
      in = shapes[i];
    }
    acts_.resize(layers_.size() + 1);
    grads_.resize(layers_.size() + 1);
  }

  /// He initialisation of every parameter, layer by layer, from one Rng(seed).
  void init(std::uint64_t seed) {
    Rng rng(seed);
    for (auto& layer : layers_) {
      auto ps = layer->params();
      if (ps.empty()) continue;
      // ps[0] is the weight, ps[1] the bias.
      he_init(ps[0]->value.ptr(), static_cast<long>(ps[0]->value.size()), ps[1]->value.ptr(),
              static_cast<long>(ps[1]->value.size()), layer->fan_in(), rng);
      for (auto* p : ps) {
        std::fill(p->velocity.data.begin(), p->velocity.data.end(), T(0));
        std::fill(p->grad.data.begin(), p->grad.data.end(), T(0));
      }
    }
  }

  /// x [B, input] -> logits [B, classes]; the pointer stays valid until the next forward().
  const T* forward(const T* x, int B) {
    reserve(B);
    std::copy(x, x + B * input_.size(), acts_[0].data());
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      const auto start = Clock::now();
      layers_[i]->forward(acts_[i].data(), acts_[i + 1].data(), B);
      if (profiling_) times_[i].forward_ms += ms_since(start);
    }
    return acts_.back().data();
  }

  /// dlogits [B, classes] -> every parameter's gradient (for the batch of the last
  /// forward()), and dL/dinput [B, input] into `dinput` when it is not null.
  void backward(const T* dlogits, int B, T* dinput = nullptr) {
    std::copy(dlogits, dlogits + static_cast<long>(B) * classes_, grads_.back().data());
    for (std::size_t i = layers_.size(); i-- > 0;) {
      const auto start = Clock::now();
      T* dx = i == 0 ? dinput : grads_[i].data();  // training never needs dL/dinput
      layers_[i]->backward(acts_[i].data(), acts_[i + 1].data(), grads_[i + 1].data(), dx, B);
      if (profiling_) {
        times_[i].backward_ms += ms_since(start);
        ++times_[i].calls;
      }
    }
  }

  /// Every parameter, in layer order.
  std::vector<Param<T>*> params() {
    std::vector<Param<T>*> out;
    for (auto& layer : layers_)
      for (auto* p : layer->params()) out.push_back(p);
    return out;
  }

  const std::vector<std::unique_ptr<Layer<T>>>& layers() const { return layers_; }
  Shape3 input_shape() const { return input_; }
  int classes() const { return classes_; }

  /// Per-layer wall-clock times (forward, backward) while enabled.
  void enable_profiling(bool on) {
    profiling_ = on;
    reset_times();
  }
  void reset_times() {
    times_.assign(layers_.size(), LayerTime{});
    for (std::size_t i = 0; i < layers_.size(); ++i)
      times_[i].layer = layers_[i]->name() + " (" + layers_[i]->token() + ")";
  }
  const std::vector<LayerTime>& times() const { return times_; }

 private:
  using Clock = std::chrono::steady_clock;
  static double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  }
  void reserve(int B) {
    if (B <= capacity_) return;
    capacity_ = B;
    acts_[0].assign(static_cast<std::size_t>(B) * input_.size(), T(0));
    grads_[0].assign(acts_[0].size(), T(0));
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      acts_[i + 1].assign(static_cast<std::size_t>(B) * layers_[i]->out_shape().size(), T(0));
      grads_[i + 1].assign(acts_[i + 1].size(), T(0));
    }
  }

  Shape3 input_;
  int classes_;
  int capacity_ = 0;
  bool profiling_ = false;
  std::vector<std::unique_ptr<Layer<T>>> layers_;
  std::vector<std::vector<T>> acts_, grads_;
  std::vector<LayerTime> times_;
};

/// The initial parameters of a model as host tensors, in model order: what every
/// stage (CPU or GPU) starts from for this seed.
inline std::vector<NamedTensor> initial_parameters(const Arch& arch, Shape3 input, int classes, std::uint64_t seed,
                                                   const LayerFactory<float>& make = make_dense_or_activation<float>) {
  Network<float> net(arch, input, classes, make);
  net.init(seed);
  std::vector<NamedTensor> out;
  for (auto* p : net.params()) out.push_back({p->name, p->value});
  return out;
}

}  // namespace course
