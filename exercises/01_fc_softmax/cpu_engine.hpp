/// @file cpu_engine.hpp
/// @brief Stage 01: the CPU engine the shared trainer drives (glue, not a task).
///
/// Later stages reuse it with a layer factory that also knows conv and pool.
#pragma once

#include <memory>
#include <stdexcept>

#include "01_fc_softmax/network.hpp"
#include "01_fc_softmax/train.hpp"
#include "common/train/engine.hpp"

namespace course {

/// Runs a Network<float> on one CPU thread.
class CpuEngine : public Engine {
 public:
  CpuEngine(const EngineConfig& cfg, const LayerFactory<float>& make = make_dense_or_activation<float>)
      : cfg_(checked(cfg)), net_(cfg.arch, cfg.input, cfg.classes, make) {
    net_.init(cfg.seed);
    net_.enable_profiling(cfg.profile);
  }
  std::string device() const override { return "CPU, 1 thread"; }
  void set_learning_rate(double lr) override { cfg_.lr = lr; }
  EpochStats train_epoch(const Dataset& train, int epoch, const BatchCallback& on_batch) override {
    return course::train_epoch(net_, train, cfg_, epoch, on_batch);
  }
  EpochStats evaluate(const Dataset& data, std::vector<int>* predictions) override {
    return course::evaluate(net_, data, cfg_, predictions);
  }
  std::vector<NamedTensor> get_parameters() override {
    std::vector<NamedTensor> out;
    for (auto* p : net_.params()) out.push_back({p->name, p->value});
    return out;
  }
  void set_parameters(const std::vector<NamedTensor>& params) override {
    auto mine = net_.params();
    if (params.size() != mine.size())
      throw std::invalid_argument("expected " + std::to_string(mine.size()) + " parameter tensors, got " +
                                  std::to_string(params.size()));
    for (std::size_t i = 0; i < mine.size(); ++i) {
      if (params[i].name != mine[i]->name || params[i].tensor.shape != mine[i]->value.shape)
        throw std::invalid_argument("parameter " + std::to_string(i) + " is " + params[i].name + " " +
                                    params[i].tensor.shape_str() + ", expected " + mine[i]->name + " " +
                                    mine[i]->value.shape_str());
      mine[i]->value.data = params[i].tensor.data;
    }
  }
  std::vector<LayerTime> layer_times() const override { return net_.times(); }
  void reset_layer_times() override { net_.reset_times(); }
  /// train_epoch() passes the real running loss to its callback after every step.
  bool reports_batch_loss() const override { return true; }
  /// train_epoch() and evaluate() add up the absolute errors with --loss mse (loss_forward_backward).
  bool reports_mae() const override { return true; }
  /// The SGD velocity of every parameter, in model order ("fc1.weight.velocity", ...):
  /// with the parameters, all a checkpoint needs to continue bit for bit.
  std::vector<NamedTensor> get_optimizer_state() override {
    std::vector<NamedTensor> out;
    for (auto* p : net_.params()) out.push_back({p->name + ".velocity", p->velocity});
    return out;
  }
  void set_optimizer_state(const std::vector<NamedTensor>& state) override {
    auto mine = net_.params();
    if (state.size() != mine.size())
      throw std::invalid_argument("expected " + std::to_string(mine.size()) + " velocity tensors, got " +
                                  std::to_string(state.size()));
    for (std::size_t i = 0; i < mine.size(); ++i) {
      if (state[i].name != mine[i]->name + ".velocity" || state[i].tensor.shape != mine[i]->velocity.shape)
        throw std::invalid_argument("optimizer tensor " + std::to_string(i) + " is " + state[i].name + " " +
                                    state[i].tensor.shape_str() + ", expected " + mine[i]->name + ".velocity " +
                                    mine[i]->velocity.shape_str());
      mine[i]->velocity.data = state[i].tensor.data;
    }
  }
  Network<float>& network() { return net_; }

 protected:
  /// cfg, once its output activation is known to go with its loss (course::check_output_activation).
  static const EngineConfig& checked(const EngineConfig& cfg) {
    check_output_activation(cfg.arch, cfg.loss);
    return cfg;
  }

  EngineConfig cfg_;
  Network<float> net_;
};

}  // namespace course
