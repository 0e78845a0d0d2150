// Helpers shared by the stage 03 tests: small models, weights drawn without
// he_init (Task 1.5), replicas built by hand, and comparisons that print the
// tensor, its shape, expected and actual where they differ, and the slip that
// explains them.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "01_fc_softmax/cpu_engine.hpp"
#include "01_fc_softmax/network.hpp"
#include "02_conv_pool/cnn.hpp"
#include "03_openmp/replica.hpp"
#include "common/data/data.hpp"
#include "common/train/engine.hpp"
#include "common/core/rng.hpp"
#include "course_test.hpp"
#include "tensor_check.hpp"

namespace course::s03test {

/// A small CNN with every layer kind of stage 02, on 1x12x12 inputs, and a small MLP on 1x6x6.
inline const char* const kSmallCnn = "conv4k3p1,relu,pool2,conv6k3p1,relu,pool2,flatten,fc16,relu,fc10";
inline const char* const kSmallMlp = "fc24,relu,fc16,tanh,fc10";
inline const Shape3 kCnnInput{1, 12, 12};
inline const Shape3 kMlpInput{1, 6, 6};
constexpr int kClasses = 10;

/// Weights uniform in +-1/sqrt(fan-in) and biases in +-0.1, drawn here rather
/// than by he_init, so a stage 03 test does not wait for Task 1.5.
template <typename T>
void random_weights(const std::vector<Param<T>*>& params, std::uint64_t seed) {
  Rng rng(seed, 11);
  for (Param<T>* p : params) {
    const bool bias = p->value.shape.size() == 1;
    const double a = bias ? 0.1 : 1.0 / std::sqrt(static_cast<double>(p->value.size() / p->value.shape[0]));
    for (auto& v : p->value.data) v = static_cast<T>(rng.uniform(-a, a));
  }
}

/// Replicas of a network of `spec` (the master, owned by the caller) with
/// random weights on the master and different random weights on every copy,
/// so a copy that forgets to take the master's weights gives wrong numbers.
template <typename T>
struct TestReplicas {
  Network<T> master;
  ReplicaSet<T> set;
  TestReplicas(const std::string& spec, Shape3 input, int count, const LayerFactory<T>& make, std::uint64_t seed)
      : master(parse_arch(spec), input, kClasses, make),
        set(make_replicas(master, count, parse_arch(spec), input, kClasses, make)) {
    random_weights(master.params(), seed);
    for (int t = 1; t < count; ++t) random_weights(set.replicas[t]->params, seed + 100 + t);
  }
};

/// Compares got with want entry by entry, relative to the tensor's largest entry:
/// |got - want| <= rtol * max|want|; rtol = 0 asks for bit-identical values. On failure the
/// message is tensor_matches's: the tensor, its shape, expected and actual at the first wrong
/// entries and the worst, and the slip that explains them (one of `slips`, or a generic one).
///
/// Rounding errors of a float sum scale with the size of its terms, not of the result, so an
/// entry that is nearly zero by cancellation (a bias gradient summed over a batch) is measured
/// against the tensor's scale.
template <typename T, typename U>
::testing::AssertionResult close(const std::string& what, const TensorShape& shape, const T* got, const U* want,
                                 double rtol, const std::vector<testkit::KnownSlip>& slips = {}) {
  double scale = 0;
  for (std::size_t i = 0; i < shape.count(); ++i) scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
  return testkit::tensor_matches(what, shape, got, want, testkit::Tolerance{rtol * scale, 0}, slips);
}

/// Every parameter tensor of `got` against `want` (same names and shapes).
inline void expect_params_close(const std::vector<NamedTensor>& got, const std::vector<NamedTensor>& want,
                                double rtol, const std::string& context) {
  ASSERT_EQ(got.size(), want.size()) << context;
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].name, want[i].name) << context;
    ASSERT_EQ(got[i].tensor.shape, want[i].tensor.shape) << context << " " << got[i].name;
    EXPECT_TRUE(close(context + ", " + got[i].name, testkit::parameter_shape(want[i].tensor.shape), got[i].tensor.ptr(),
                      want[i].tensor.ptr(), rtol));
  }
}

/// Copies of every parameter of `net`, in model order.
inline std::vector<NamedTensor> parameters_of(Network<float>& net) {
  std::vector<NamedTensor> out;
  for (Param<float>* p : net.params()) out.push_back({p->name, p->value});
  return out;
}

/// The gradient buffers of two networks of one model, tensor by tensor: after a
/// step they hold the gradient of that step's batch, which the parameters show
/// only scaled by the learning rate.
inline void expect_gradients_close(Network<float>& got, Network<float>& want, double rtol, const std::string& context) {
  const auto g = got.params(), w = want.params();
  ASSERT_EQ(g.size(), w.size()) << context;
  for (std::size_t i = 0; i < g.size(); ++i)
    EXPECT_TRUE(close(context + ", gradient of " + w[i]->name, testkit::parameter_shape(w[i]->grad.shape),
                      g[i]->grad.ptr(), w[i]->grad.ptr(), rtol));
}

/// An engine configuration for a model spec on examples of `input`.
inline EngineConfig config(const std::string& spec, Shape3 input, int batch, int threads, double lr = 0.05,
                           double momentum = 0.9, std::uint64_t seed = 3) {
  EngineConfig cfg;
  cfg.arch = parse_arch(spec);
  cfg.input = input;
  cfg.classes = kClasses;
  cfg.batch = batch;
  cfg.lr = lr;
  cfg.momentum = momentum;
  cfg.seed = seed;
  cfg.threads = threads;
  return cfg;
}

/// Parameters after one training step: an epoch over a data set of exactly one batch.
inline std::vector<NamedTensor> after_one_step(Engine& engine, const Dataset& batch) {
  engine.train_epoch(batch, 0, {});
  return engine.get_parameters();
}

/// One step of the parallel engine `Parallel` (with a network(), as stage 03's engines
/// have) on 1 to 4 threads against one step of stage 01's single-thread engine, on a
/// batch of synthetic 1x14x14 examples: the same gradients and parameters to within 1e-5.
/// Batches of 64 and of 37, which 3 threads split 13+12+12 and 4 threads 10+9+9+9. The
/// pictures are small because a learner's every save runs this (the named models take
/// any input size; what is checked, the split and the sum, does not depend on it).
template <typename Parallel>
void expect_step_matches_one_thread(const std::string& spec, const LayerFactory<float>& make) {
  const Shape3 input{1, 14, 14};
  for (int B : {64, 37}) {
    const Dataset batch = make_synthetic(B, input, kClasses, 41);
    // The one-thread step once per batch: every thread count is held against the same one.
    CpuEngine single(config(spec, input, B, 1), make);
    const auto want = after_one_step(single, batch);
    for (int T = 1; T <= 4; ++T) {
      Parallel parallel(config(spec, input, B, T), make);
      const auto got = after_one_step(parallel, batch);
      const std::string context = spec + ", batch " + std::to_string(B) + ", " + std::to_string(T) + " threads vs one";
      expect_gradients_close(parallel.network(), single.network(), 1e-5, context);
      expect_params_close(got, want, 1e-5, context);
    }
  }
}

}  // namespace course::s03test

/// The two tests of a parallel engine's whole step (Task 3.2's DataParallelEngine, Task 3.3's
/// LoopParallelEngine): on `mlp` against stage 01's one-thread step, on `cnn` against stage 02's
/// (expect_step_matches_one_thread above).
#define COURSE_PARALLEL_STEP_TESTS(Suite, Parallel)                                                       \
  TEST(Suite, MlpMatchesStage01) {                                                                        \
    ::course::s03test::expect_step_matches_one_thread<Parallel>(::course::named_model_spec("mlp"),        \
                                                                ::course::make_dense_or_activation<float>); \
  }                                                                                                       \
  TEST(Suite, CnnMatchesStage02) {                                                                        \
    ::course::s03test::expect_step_matches_one_thread<Parallel>(::course::named_model_spec("cnn"),        \
                                                                ::course::make_cnn_layer<float>);         \
  }
