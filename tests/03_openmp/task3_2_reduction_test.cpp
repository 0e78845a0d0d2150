// Task 3.2: the reduction of the shards' gradients and the one SGD step; then
// whole data-parallel steps against stage 01 (MLP) and stage 02 (CNN).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "01_fc_softmax/cpu_engine.hpp"
#include "03_openmp/data_parallel.hpp"
#include "03_openmp/omp_engine.hpp"
#include "stage03_support.hpp"

using namespace course;
using namespace course::s03test;

namespace {

// Random gradients in every replica and random velocities in the master.
void random_gradients(TestReplicas<float>& r, std::uint64_t seed) {
  for (std::size_t t = 0; t < r.set.replicas.size(); ++t)
    for (Param<float>* p : r.set.replicas[t]->params) {
      const auto g = testkit::random_vector(p->grad.size(), seed + 10 * t + p->grad.size());
      std::copy(g.begin(), g.end(), p->grad.data.begin());
    }
  for (Param<float>* p : r.master.params()) {
    const auto v = testkit::random_vector(p->velocity.size(), seed + 7 + p->velocity.size(), -0.1, 0.1);
    std::copy(v.begin(), v.end(), p->velocity.data.begin());
  }
}

// reduce_and_update against the formulas in double precision.
void check_reduction(const std::vector<int>& sizes, std::uint64_t seed) {
  const int R = static_cast<int>(sizes.size());
  int B = 0;
  for (int n : sizes) B += n;
  SCOPED_TRACE("shard sizes of a batch of " + std::to_string(B) + " among " + std::to_string(R) + " replicas");
  TestReplicas<float> r(kSmallMlp, kMlpInput, R, make_dense_or_activation<float>, seed);
  random_gradients(r, seed);
  std::vector<ShardResult> shards;
  for (int n : sizes) shards.push_back({n, 0.0, 0});
  // An empty shard's buffers hold whatever an older batch left: NaN here, which must not leak in.
  for (int t = 0; t < R; ++t)
    if (sizes[t] == 0)
      for (Param<float>* p : r.set.replicas[t]->params)
        std::fill(p->grad.data.begin(), p->grad.data.end(), std::numeric_limits<float>::quiet_NaN());
  const float lr = 0.1f, momentum = 0.9f;

  // g = sum_t weight(t) g_t over the non-empty shards, v = m v + g, w -= lr v, in double; and
  // the same with the slips: the shards weighted equally, or not at all, w stepped before v.
  struct Step {
    std::vector<std::vector<double>> g, v, w;  // per parameter tensor
  };
  int nonempty = 0;
  for (int n : sizes) nonempty += n > 0;
  const auto step = [&](const std::function<double(int)>& weight, bool w_before_v) {
    Step out;
    for (std::size_t p = 0; p < r.master.params().size(); ++p) {
      Param<float>& m = *r.master.params()[p];
      std::vector<double> g(m.grad.size(), 0.0), v(g.size()), w(g.size());
      for (int t = 0; t < R; ++t) {
        if (sizes[t] == 0) continue;
        const Param<float>& pt = *r.set.replicas[t]->params[p];
        for (std::size_t i = 0; i < g.size(); ++i) g[i] += weight(t) * pt.grad[i];
      }
      for (std::size_t i = 0; i < g.size(); ++i) {
        v[i] = double(momentum) * m.velocity[i] + g[i];
        w[i] = m.value[i] - double(lr) * (w_before_v ? double(m.velocity[i]) : v[i]);
      }
      out.g.push_back(g);
      out.v.push_back(v);
      out.w.push_back(w);
    }
    return out;
  };
  const Step want = step([&](int t) { return double(sizes[t]) / B; }, false);
  const struct {
    std::string what;
    Step step;
  } slips[] = {{"the shards weighted equally, g = (1/" + std::to_string(nonempty) + ") sum_t g_t (the weight is n_t/B)",
                step([&](int) { return 1.0 / nonempty; }, false)},
               {"the shards added without weights, g = sum_t g_t (the weight is n_t/B)", step([](int) { return 1.0; }, false)},
               {"w stepped with the old v, before v = momentum v + g", step([&](int t) { return double(sizes[t]) / B; }, true)}};
  const auto slips_of = [&](std::vector<std::vector<double>> Step::*tensor, std::size_t p) {
    std::vector<testkit::KnownSlip> out;
    for (const auto& slip : slips) out.push_back({slip.what, (slip.step.*tensor)[p]});
    return out;
  };

  reduce_and_update(r.set.replicas, shards, B, lr, momentum);

  for (std::size_t p = 0; p < want.g.size(); ++p) {
    const Param<float>& m = *r.master.params()[p];
    const TensorShape shape = testkit::parameter_shape(m.grad.shape);
    EXPECT_TRUE(close("the master's " + m.name + " gradient, sum_t (n_t/B) g_t", shape, m.grad.ptr(), want.g[p].data(),
                      1e-5, slips_of(&Step::g, p)));
    EXPECT_TRUE(close("the master's " + m.name + " velocity", shape, m.velocity.ptr(), want.v[p].data(), 1e-5,
                      slips_of(&Step::v, p)));
    EXPECT_TRUE(close("the master's " + m.name + " after the step", shape, m.value.ptr(), want.w[p].data(), 1e-5,
                      slips_of(&Step::w, p)));
  }
}

}  // namespace

TEST(Task3_2_Reduction, WeightedSumOfTheShardsThenOneStep) {
  check_reduction({3, 2, 2}, 31);
  check_reduction({10}, 32);
  check_reduction({5, 5, 4, 4}, 33);
}

TEST(Task3_2_Reduction, EmptyShardsAreLeftOut) {
  check_reduction({1, 1, 0, 0}, 34);
  check_reduction({1, 0, 0}, 35);
}

TEST(Task3_2_Reduction, OneReplicaIsPlainSgdBitForBit) {
  TestReplicas<float> r(kSmallMlp, kMlpInput, 1, make_dense_or_activation<float>, 36);
  random_gradients(r, 36);
  Network<float> ref(parse_arch(kSmallMlp), kMlpInput, kClasses);
  for (std::size_t p = 0; p < ref.params().size(); ++p) {
    ref.params()[p]->value = r.master.params()[p]->value;
    ref.params()[p]->grad = r.master.params()[p]->grad;
    ref.params()[p]->velocity = r.master.params()[p]->velocity;
  }
  reduce_and_update(r.set.replicas, {{9, 0.0, 0}}, 9, 0.05f, 0.9f);
  for (Param<float>* p : ref.params())
    sgd_update(p->value.ptr(), p->grad.ptr(), p->velocity.ptr(), static_cast<long>(p->value.size()), 0.05f, 0.9f);
  for (std::size_t p = 0; p < ref.params().size(); ++p)
    EXPECT_TRUE(close(ref.params()[p]->name + " after one step with one replica (the weight n_0/B is exactly 1: the step "
                          "must equal stage 01's sgd_update, bit for bit)",
                      testkit::parameter_shape(ref.params()[p]->value.shape), r.master.params()[p]->value.ptr(),
                      ref.params()[p]->value.ptr(), 0.0));
}

// ---- whole steps: Tasks 3.1 and 3.2 together, through the engine ---------------------------

TEST(Task3_2_DataParallelStep, MlpMatchesStage01) {
  expect_step_matches_one_thread<DataParallelEngine>(named_model_spec("mlp"), make_dense_or_activation<float>);
}

TEST(Task3_2_DataParallelStep, CnnMatchesStage02) {
  expect_step_matches_one_thread<DataParallelEngine>(named_model_spec("cnn"), make_cnn_layer<float>);
}
