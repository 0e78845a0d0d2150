// The checks behind the Task 5.3 to 5.6 tests: one conv case (stage 02's
// shape grid, tests/02_conv_pool/conv_cases.hpp) through every GPU variant
// (own GEMM and cuBLAS, each unrolled per image and per batch), against stage
// 02's CPU layer run in double on the same float inputs.
//
// Each check calls the GPU first and the CPU reference after it, so that on
// the exercise track a test fails on the hole of its own task.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../02_conv_pool/conv_cases.hpp"
#include "02_conv_pool/conv.hpp"
#include "05_im2col_gemm/conv_gpu.hpp"
#include "stage05_support.hpp"

namespace course::s05test {

/// Random inputs of one conv case: x, W, b and an output gradient dy, uniform in [-1, 1].
struct ConvInputs {
  std::vector<float> x, W, b, dy;
  ConvInputs(int B, const ConvGeometry& g, std::uint64_t seed)
      : x(random_floats(static_cast<std::size_t>(B) * g.in_size(), seed)),
        W(random_floats(static_cast<std::size_t>(g.weight_size()), seed + 1)),
        b(random_floats(static_cast<std::size_t>(g.C_out), seed + 2)),
        dy(random_floats(static_cast<std::size_t>(B) * g.out_size(), seed + 3)) {}
};

/// Task 5.3: y = conv(x, W) + b for every variant, against conv2d_forward<double>.
inline void check_forward(int B, const ConvGeometry& g, double atol = kLayerAtol, double rtol = kLayerRtol) {
  const ConvInputs in(B, g, 31);
  const DeviceBuffer<float> x = to_device(in.x), W = to_device(in.W), b = to_device(in.b);
  std::vector<double> want;
  for (const ConvVariant& v : conv_variants()) {
    ConvRig rig(v, B, g);
    DeviceBuffer<float> y = poisoned<float>(static_cast<std::size_t>(B) * g.out_size());
    conv_forward_gpu(rig.ctx, x.get(), W.get(), b.get(), y.get(), B, g);
    const std::vector<float> got = to_host(y);
    if (want.empty()) {
      want.resize(got.size());
      conv2d_forward(to_double(in.x).data(), to_double(in.W).data(), to_double(in.b).data(), want.data(), B, g);
    }
    EXPECT_TRUE(close("y (" + v.name() + ") for batch " + std::to_string(B) + ", " + g.str(), got, want,
                      output_shape(B, g), atol, rtol));
  }
}

/// Task 5.4: dx = conv input gradient for every variant, against conv2d_backward_input<double>.
inline void check_input_gradient(int B, const ConvGeometry& g, double atol = kLayerAtol, double rtol = kLayerRtol) {
  const ConvInputs in(B, g, 41);
  const DeviceBuffer<float> dy = to_device(in.dy), W = to_device(in.W);
  std::vector<double> want;
  for (const ConvVariant& v : conv_variants()) {
    ConvRig rig(v, B, g);
    DeviceBuffer<float> dx = poisoned<float>(static_cast<std::size_t>(B) * g.in_size());
    conv_backward_input_gpu(rig.ctx, dy.get(), W.get(), dx.get(), B, g);
    const std::vector<float> got = to_host(dx);
    if (want.empty()) {
      want.resize(got.size());
      conv2d_backward_input(to_double(in.dy).data(), to_double(in.W).data(), want.data(), B, g);
    }
    EXPECT_TRUE(close("dx (" + v.name() + ") for batch " + std::to_string(B) + ", " + g.str(), got, want,
                      input_shape(B, g), atol, rtol));
  }
}

/// Task 5.5: dW for every variant (split into up to split_k chunks where the variant
/// splits), against conv2d_backward_weight<double>.
inline void check_weight_gradient(int B, const ConvGeometry& g, double atol = kLayerAtol, double rtol = kLayerRtol,
                                  int split_k = kDefaultSplitK) {
  const ConvInputs in(B, g, 51);
  const DeviceBuffer<float> x = to_device(in.x), dy = to_device(in.dy);
  std::vector<double> want, want_db(static_cast<std::size_t>(g.C_out));
  for (const ConvVariant& v : conv_variants()) {
    ConvRig rig(v, B, g, split_k);
    DeviceBuffer<float> dW = poisoned<float>(static_cast<std::size_t>(g.weight_size()));
    conv_backward_weight_gpu(rig.ctx, x.get(), dy.get(), dW.get(), B, g);
    const std::vector<float> got = to_host(dW);
    if (want.empty()) {
      want.resize(got.size());
      conv2d_backward_weight(to_double(in.x).data(), to_double(in.dy).data(), want.data(), want_db.data(), B, g);
    }
    EXPECT_TRUE(close("dW (" + v.name() + ", " + std::to_string(conv_split_chunks(rig.ctx, B, g)) +
                          " split-K chunks) for batch " + std::to_string(B) + ", " + g.str(),
                      got, want, weight_shape(g), atol, rtol));
  }
}

/// Task 5.6: db, against the db of conv2d_backward_weight<double>.
inline void check_bias_gradient(int B, const ConvGeometry& g, double atol = kLayerAtol, double rtol = kLayerRtol) {
  const ConvInputs in(B, g, 61);
  const DeviceBuffer<float> dy = to_device(in.dy);
  DeviceBuffer<float> db = poisoned<float>(static_cast<std::size_t>(g.C_out));
  conv_backward_bias_gpu(dy.get(), db.get(), B, g);
  const std::vector<float> got = to_host(db);
  std::vector<double> want_dW(static_cast<std::size_t>(g.weight_size())), want(got.size());
  conv2d_backward_weight(to_double(in.x).data(), to_double(in.dy).data(), want_dW.data(), want.data(), B, g);
  EXPECT_TRUE(close("db for batch " + std::to_string(B) + ", " + g.str(), got, want, bias_shape(g), atol, rtol));
}

/// The conv layers of the `cnn` model on Fashion-MNIST's 1x28x28 input.
inline const ConvGeometry kCnnConv1{1, 28, 28, 16, 3, 1, 1};
inline const ConvGeometry kCnnConv2{16, 14, 14, 32, 3, 1, 1};

}  // namespace course::s05test
