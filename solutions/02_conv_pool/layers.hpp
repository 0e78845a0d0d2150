/// @file layers.hpp
/// @brief Stage 02: conv, max-pool, average-pool and flatten as layers of stage 01's Network.
///
/// Glue, not a task: each class owns its parameters (conv) or its arg-max
/// record (max-pool) and calls the functions of conv.hpp, pool.hpp, avgpool.hpp and flatten.hpp
/// through the Layer<T> interface of 01_fc_softmax/network.hpp, so stage 01's
/// Network, training loop and engine run CNNs without a change.
#pragma once

#include <string>
#include <vector>

#include "01_fc_softmax/network.hpp"
#include "02_conv_pool/avgpool.hpp"
#include "02_conv_pool/conv.hpp"
#include "02_conv_pool/flatten.hpp"
#include "02_conv_pool/pool.hpp"
#include "common/model/arch.hpp"

namespace course {

/// Convolution layer: weight [C_out, C_in, K, K] ("conv1.weight"), bias [C_out] ("conv1.bias").
template <typename T>
class Conv2dLayer : public Layer<T> {
 public:
  Conv2dLayer(const std::string& name, const ConvGeometry& g)
      : name_(name), g_((g.check(), g)), W_(name + ".weight", {g.C_out, g.C_in, g.K, g.K}), b_(name + ".bias", {g.C_out}) {}
  std::string name() const override { return name_; }
  std::string token() const override {
    LayerSpec spec;
    spec.kind = LayerKind::Conv;
    spec.units = g_.C_out;
    spec.kernel = g_.K;
    spec.pad = g_.P;
    spec.stride = g_.S;
    return spec.token();
  }
  Shape3 out_shape() const override { return {g_.C_out, g_.out_h(), g_.out_w()}; }
  void forward(const T* x, T* y, int B) override { conv2d_forward(x, W_.value.ptr(), b_.value.ptr(), y, B, g_); }
  void backward(const T* x, const T*, const T* dy, T* dx, int B) override {
    conv2d_backward_weight(x, dy, W_.grad.ptr(), b_.grad.ptr(), B, g_);
    if (dx) conv2d_backward_input(dy, W_.value.ptr(), dx, B, g_);  // the first layer needs no input gradient
  }
  std::vector<Param<T>*> params() override { return {&W_, &b_}; }
  /// Each output sums C_in * K * K inputs (He initialisation).
  int fan_in() const override { return g_.C_in * g_.K * g_.K; }
  const ConvGeometry& geometry() const { return g_; }

 private:
  std::string name_;
  ConvGeometry g_;
  Param<T> W_, b_;
};

/// The --arch token of a pool layer of `kind` (max or average) with geometry g, e.g. "pool2", "avgpool3s1p1".
inline std::string pool_token(LayerKind kind, const PoolGeometry& g) {
  LayerSpec spec;
  spec.kind = kind;
  spec.kernel = g.K;
  spec.stride = g.S;
  spec.pad = g.P;
  return spec.token();
}

/// Max-pool layer; remembers the arg-max of its last forward() for backward().
template <typename T>
class MaxPoolLayer : public Layer<T> {
 public:
  MaxPoolLayer(const std::string& name, const PoolGeometry& g) : name_(name), g_((g.check(), g)) {}
  std::string name() const override { return name_; }
  std::string token() const override { return pool_token(LayerKind::MaxPool, g_); }
  Shape3 out_shape() const override { return {g_.C, g_.out_h(), g_.out_w()}; }
  void forward(const T* x, T* y, int B) override {
    argmax_.resize(static_cast<std::size_t>(B) * g_.out_size());
    maxpool_forward(x, y, argmax_.data(), B, g_);
  }
  void backward(const T*, const T*, const T* dy, T* dx, int B) override {
    if (dx) maxpool_backward(dy, argmax_.data(), dx, B, g_);
  }
  const PoolGeometry& geometry() const { return g_; }

 private:
  std::string name_;
  PoolGeometry g_;
  std::vector<int> argmax_;  // [B, C, Ho, Wo] of the last forward()
};

/// Average-pool layer (Task 2.8's functions); it records nothing: its gradient depends on dy alone.
template <typename T>
class AvgPoolLayer : public Layer<T> {
 public:
  AvgPoolLayer(const std::string& name, const PoolGeometry& g) : name_(name), g_((g.check("average-pool"), g)) {}
  std::string name() const override { return name_; }
  std::string token() const override { return pool_token(LayerKind::AvgPool, g_); }
  Shape3 out_shape() const override { return {g_.C, g_.out_h(), g_.out_w()}; }
  void forward(const T* x, T* y, int B) override { avgpool_forward(x, y, B, g_); }
  void backward(const T*, const T*, const T* dy, T* dx, int B) override {
    if (dx) avgpool_backward(dy, dx, B, g_);
  }
  const PoolGeometry& geometry() const { return g_; }

 private:
  std::string name_;
  PoolGeometry g_;
};

/// Flatten layer: [C, H, W] -> [C*H*W, 1, 1].
template <typename T>
class FlattenLayer : public Layer<T> {
 public:
  FlattenLayer(const std::string& name, Shape3 in) : name_(name), in_(in) {}
  std::string name() const override { return name_; }
  std::string token() const override { return "flatten"; }
  Shape3 out_shape() const override { return {static_cast<int>(in_.size()), 1, 1}; }
  void forward(const T* x, T* y, int B) override { flatten_forward(x, y, B * in_.size()); }
  void backward(const T*, const T*, const T* dy, T* dx, int B) override {
    if (dx) flatten_backward(dy, dx, B * in_.size());
  }

 private:
  std::string name_;
  Shape3 in_;
};

}  // namespace course
