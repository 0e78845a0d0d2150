// Stage 04's tests of the GPU MLP against stage 01's CPU network: both sides start from the
// same weights, drawn here (so that the tests do not wait on stage 01's he_init), and their
// parameters and predictions are compared after the same steps.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "01_fc_softmax/network.hpp"
#include "01_fc_softmax/train.hpp"
#include "gpu_testkit.hpp"
#include "mlp_engine.hpp"
#include "tensor_check.hpp"

namespace course::gputest {

/// He-scaled weights and small non-zero biases (so the bias paths matter), in model order.
inline std::vector<NamedTensor> test_weights(const EngineConfig& cfg, std::uint64_t seed) {
  Network<float> net(cfg.arch, cfg.input, cfg.classes);
  Rng rng(seed, 3);
  std::vector<NamedTensor> out;
  for (Param<float>* p : net.params()) {
    Tensor t(p->value.shape);
    if (t.shape.size() == 2) {
      rng.fill_normal(t.ptr(), t.size(), std::sqrt(2.0 / t.shape[1]));
    } else {
      for (auto& b : t.data) b = static_cast<float>(rng.uniform(-0.1, 0.1));
    }
    out.push_back({p->name, std::move(t)});
  }
  return out;
}

/// Stage 01's network for cfg, starting from `weights`.
inline Network<float> cpu_network(const EngineConfig& cfg, const std::vector<NamedTensor>& weights) {
  Network<float> net(cfg.arch, cfg.input, cfg.classes);
  const auto params = net.params();
  for (std::size_t i = 0; i < params.size(); ++i) params[i]->value.data = weights[i].tensor.data;
  return net;
}

/// Every parameter of the GPU engine against the CPU network's; `when` ends each tensor's
/// name in a failure ("after training").
inline void expect_same_parameters(GpuEngine& gpu, Network<float>& cpu, const std::string& when, double max_abs,
                                   double max_rel_norm) {
  const std::vector<NamedTensor> got = gpu.get_parameters();
  const auto want = cpu.params();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(close_enough(got[i].name + " " + when + " (expected: stage 01's)", got[i].tensor.data,
                             want[i]->value.data, testkit::parameter_shape(got[i].tensor.shape), max_abs, 0.0,
                             max_rel_norm));
}

/// The GPU's predictions of `test` against the CPU's: they must agree, except where the CPU's
/// outputs for the two predicted classes are within max_gap (rounding may pick either).
inline void expect_same_predictions(Network<float>& cpu, const Dataset& test, const std::vector<int>& gpu_predictions,
                                    const std::vector<int>& cpu_predictions, float max_gap) {
  for (int i = 0; i < test.size(); ++i) {
    const int g = gpu_predictions[static_cast<std::size_t>(i)], c = cpu_predictions[static_cast<std::size_t>(i)];
    if (g == c) continue;
    const float* z = cpu.forward(test.image(i), 1);
    const float gap = std::fabs(z[g] - z[c]);
    EXPECT_LT(gap, max_gap) << "example " << i << ": GPU predicts " << g << ", CPU " << c << ", outputs " << gap
                            << " apart";
  }
}

/// One evaluation of `test` on both sides from the same weights, the GPU's (on cuBLAS) first.
struct BothEvaluated {
  Network<float> cpu;  ///< stage 01's network, kept for a look at its outputs
  EpochStats gpu_stats, cpu_stats;
  std::vector<int> gpu_predictions, cpu_predictions;
};

inline BothEvaluated evaluate_both(const EngineConfig& cfg, const std::vector<NamedTensor>& weights,
                                   const Dataset& test) {
  GpuEngine gpu = mlp_engine(cfg, kGemmCublas, weights);
  std::vector<int> gpu_predictions;
  const EpochStats g = gpu.evaluate(test, &gpu_predictions);
  BothEvaluated r{cpu_network(cfg, weights), g, {}, std::move(gpu_predictions), {}};
  r.cpu_stats = evaluate(r.cpu, test, cfg, &r.cpu_predictions);
  return r;
}

/// What f throws as std::invalid_argument, or a line saying it threw none.
inline std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no std::invalid_argument thrown)";
}

}  // namespace course::gputest
