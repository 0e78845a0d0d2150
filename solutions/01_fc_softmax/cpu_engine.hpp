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
    copy_into_params(params, &Param<float>::value, "", "parameter tensors", "parameter");
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
    copy_into_params(state, &Param<float>::velocity, ".velocity", "velocity tensors", "optimizer tensor");
  }
  Network<float>& network() { return net_; }

 protected:
  /// Copies `given` into one tensor of every parameter (`which`: its value, or its velocity) after
  /// checking that it is this network's list: one tensor per parameter, in model order, each named
  /// after its parameter (plus `suffix`) and of its shape. The messages call the list `tensors`
  /// ("expected 4 velocity tensors, got 3") and one of them `tensor` ("optimizer tensor 2 is ...").
  void copy_into_params(const std::vector<NamedTensor>& given, TensorT<float> Param<float>::*which,
                        const std::string& suffix, const std::string& tensors, const std::string& tensor) {
    auto mine = net_.params();
    if (given.size() != mine.size())
      throw std::invalid_argument("expected " + std::to_string(mine.size()) + " " + tensors + ", got " +
                                  std::to_string(given.size()));
    for (std::size_t i = 0; i < mine.size(); ++i) {
      TensorT<float>& own = mine[i]->*which;
      if (given[i].name != mine[i]->name + suffix || given[i].tensor.shape != own.shape)
        throw std::invalid_argument(tensor + " " + std::to_string(i) + " is " + given[i].name + " " +
                                    given[i].tensor.shape_str() + ", expected " + mine[i]->name + suffix + " " +
                                    own.shape_str());
      own.data = given[i].tensor.data;
    }
  }

  /// cfg, once its output activation is known to go with its loss (course::check_output_activation).
  static const EngineConfig& checked(const EngineConfig& cfg) {
    check_output_activation(cfg.arch, cfg.loss);
    return cfg;
  }

  EngineConfig cfg_;
  Network<float> net_;
};

}  // namespace course
