// The checks of Task 3.2 (the reduction of the shards' gradients and the one SGD step), taking the
// code under test as an argument: the task tests pass the lesson's reduce_and_update, the slips
// catalog (slips_test.cpp) a learner's wrong copy, so both meet the very same messages.
// reduce(replicas, shards, B, lr, momentum), as reduce_and_update.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "01_fc_softmax/sgd.hpp"
#include "03_openmp/replica.hpp"
#include "stage03_support.hpp"

namespace course::s03test {

// Random gradients in every replica and random velocities in the master.
inline void random_gradients(TestReplicas<float>& r, std::uint64_t seed) {
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

// `reduce` (reduce_and_update, or a learner's copy) against the formulas in double precision.
template <typename Reduce>
void check_reduction(const Reduce& reduce, const std::vector<int>& sizes, std::uint64_t seed) {
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
  // the same with the slips: the shards weighted equally, or not at all, shard 0 added twice, the
  // last shard left out, w stepped before v.
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
  const auto share = [&](int t) { return double(sizes[t]) / B; };
  const Step want = step(share, false);
  const struct {
    std::string what;
    Step step;
  } slips[] = {{"the shards weighted equally, g = (1/" + std::to_string(nonempty) + ") sum_t g_t (the weight is n_t/B)",
                step([&](int) { return 1.0 / nonempty; }, false)},
               {"the shards added without weights, g = sum_t g_t (the weight is n_t/B)", step([](int) { return 1.0; }, false)},
               {"shard 0's gradient added again: g = (n_0/B) g_0 in the master's buffer, then the sum over t from 0, "
                "not from 1, adds (n_0/B) times that buffer",
                step([&](int t) { return t == 0 ? share(0) * (1 + share(0)) : share(t); }, false)},
               {"the last shard, t = " + std::to_string(R - 1) + ", left out of the sum (t < R - 1 where t < R belongs)",
                step([&](int t) { return t == R - 1 ? 0.0 : share(t); }, false)},
               {"w stepped with the old v, before v = momentum v + g", step(share, true)}};
  const auto slips_of = [&](std::vector<std::vector<double>> Step::*tensor, std::size_t p) {
    std::vector<testkit::KnownSlip> out;
    for (const auto& slip : slips) out.push_back({slip.what, (slip.step.*tensor)[p]});
    if (nonempty < R)  // an empty shard's NaN, times its weight 0, is NaN everywhere
      out.push_back({"an empty shard's buffers added (NaN here: an older batch's; skip the shards with n_t = 0)",
                     std::vector<double>((want.*tensor)[p].size(), std::numeric_limits<double>::quiet_NaN())});
    return out;
  };

  reduce(r.set.replicas, shards, B, lr, momentum);

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

template <typename Reduce>
void check_one_replica_is_plain_sgd(const Reduce& reduce) {
  TestReplicas<float> r(kSmallMlp, kMlpInput, 1, make_dense_or_activation<float>, 36);
  random_gradients(r, 36);
  Network<float> ref(parse_arch(kSmallMlp), kMlpInput, kClasses);
  for (std::size_t p = 0; p < ref.params().size(); ++p) {
    ref.params()[p]->value = r.master.params()[p]->value;
    ref.params()[p]->grad = r.master.params()[p]->grad;
    ref.params()[p]->velocity = r.master.params()[p]->velocity;
  }
  reduce(r.set.replicas, std::vector<ShardResult>{{9, 0.0, 0}}, 9, 0.05f, 0.9f);
  for (Param<float>* p : ref.params())
    sgd_update(p->value.ptr(), p->grad.ptr(), p->velocity.ptr(), static_cast<long>(p->value.size()), 0.05f, 0.9f);
  for (std::size_t p = 0; p < ref.params().size(); ++p)
    EXPECT_TRUE(close(ref.params()[p]->name + " after one step with one replica (the weight n_0/B is exactly 1: the step "
                          "must equal stage 01's sgd_update, bit for bit)",
                      testkit::parameter_shape(ref.params()[p]->value.shape), r.master.params()[p]->value.ptr(),
                      ref.params()[p]->value.ptr(), 0.0));
}

/// Every check of Task 3.2's reduction tests, in the order of the task's tests.
template <typename Reduce>
void check_reduce_and_update(const Reduce& reduce) {
  check_reduction(reduce, {3, 2, 2}, 31);
  check_reduction(reduce, {10}, 32);
  check_reduction(reduce, {5, 5, 4, 4}, 33);
  check_reduction(reduce, {1, 1, 0, 0}, 34);
  check_reduction(reduce, {1, 0, 0}, 35);
  check_one_replica_is_plain_sgd(reduce);
}

}  // namespace course::s03test
