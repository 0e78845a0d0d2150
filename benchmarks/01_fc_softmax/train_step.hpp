// One SGD training step of a whole network on one batch, for the benchmarks
// of every CPU stage: forward, softmax cross-entropy, backward, the update.
// Later CPU stages include this file, so "BM_TrainStep_MLP" and
// "BM_TrainStep_CNN" time the same work everywhere.
#pragma once

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "01_fc_softmax/loss.hpp"
#include "01_fc_softmax/network.hpp"
#include "01_fc_softmax/sgd.hpp"
#include "common/model/arch.hpp"
#include "common/data/data.hpp"

namespace course::bench {

/// A network of `model` (a named model) on one batch of B synthetic examples of `input`.
class TrainStep {
 public:
  TrainStep(const std::string& model, Shape3 input, int B, const LayerFactory<float>& make)
      : B_(B), net_(parse_arch(named_model_spec(model)), input, kClasses, make) {
    net_.init(42);
    const Dataset data = make_synthetic(B, input, kClasses, 1);
    x_ = data.images;
    y_ = data.labels;
    probs_.resize(static_cast<std::size_t>(B) * kClasses);
    dlogits_.resize(probs_.size());
  }
  /// One step; returns the loss so the work cannot be optimised away.
  float run() {
    const float* logits = net_.forward(x_.data(), B_);
    const float loss = loss_forward_backward(std::string("cross-entropy"), logits, y_.data(), probs_.data(),
                                             dlogits_.data(), B_, kClasses);
    net_.backward(dlogits_.data(), B_);
    for (Param<float>* p : net_.params())
      sgd_update(p->value.ptr(), p->grad.ptr(), p->velocity.ptr(), static_cast<long>(p->value.size()), 0.01f, 0.9f);
    return loss;
  }

 private:
  static constexpr int kClasses = 10;
  int B_;
  Network<float> net_;
  std::vector<float> x_, probs_, dlogits_;
  std::vector<int> y_;
};

/// The body of a BM_TrainStep_* benchmark: items are images.
inline void run_train_step(benchmark::State& state, const std::string& model, Shape3 input, int B,
                           const LayerFactory<float>& make) {
  TrainStep step(model, input, B, make);
  for (auto _ : state) benchmark::DoNotOptimize(step.run());
  state.SetItemsProcessed(state.iterations() * B);
  state.SetLabel(model + " batch " + std::to_string(B) + " on " + input.str());
}

}  // namespace course::bench
