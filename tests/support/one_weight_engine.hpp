// A test engine of one weight and its velocity, for the trainer's tests: it
// evaluates every example as class 0 and keeps what it is given, so that a
// test engine derived from it writes only the training it is about.
#pragma once

#include <cstddef>
#include <vector>

#include "common/train/engine.hpp"
#include "common/core/tensor.hpp"

namespace course::testkit {

class OneWeightEngine : public Engine {
 public:
  void set_learning_rate(double) override {}
  EpochStats evaluate(const Dataset& data, std::vector<int>* predictions) override {
    if (predictions) predictions->assign(static_cast<std::size_t>(data.size()), 0);
    EpochStats s;
    s.seen = data.size();
    return s;
  }
  std::vector<NamedTensor> get_parameters() override { return {{"w", w_}}; }
  void set_parameters(const std::vector<NamedTensor>& p) override { w_ = p.at(0).tensor; }
  std::vector<NamedTensor> get_optimizer_state() override { return {{"w.velocity", v_}}; }
  void set_optimizer_state(const std::vector<NamedTensor>& s) override { v_ = s.at(0).tensor; }

 protected:
  OneWeightEngine(float w, float v) : w_({1}, w), v_({1}, v) {}
  Tensor w_, v_;
};

}  // namespace course::testkit
