// A small checkpoint with every field set, for the tests of the checkpoint file (tests/common/
// checkpoint_test.cpp, checkpoint_engine_state_test.cpp): a 2 -> 4 -> 3 MLP's tensors, with a
// -0 and a denormal among them so that a round trip must keep bits, not only values.
#pragma once

#include <limits>

#include "common/train/checkpoint.hpp"

namespace course::testkit {

inline Checkpoint small_checkpoint() {
  Checkpoint c;
  c.model.arch = "fc4,relu,fc3";
  c.model.input = Shape3{2, 1, 1};
  c.model.classes = 3;
  c.model.stage = "01_fc_softmax";
  c.model.tensors = {{"fc1.weight", Tensor({4, 2}, 0.25f)}, {"fc1.bias", Tensor({4}, -1.5f)}};
  c.model.tensors[0].tensor[5] = -0.0f;
  c.model.tensors[0].tensor[6] = std::numeric_limits<float>::denorm_min();
  c.optimizer = {{"fc1.weight.velocity", Tensor({4, 2}, 1e-7f)}, {"fc1.bias.velocity", Tensor({4}, 3.0f)}};
  c.epoch = 3;
  c.step = 5;
  c.examples_done = 160;
  c.seed = 0xFFFFFFFFFFFFFFFFull;
  c.batch = 32;
  c.lr = 0.05;
  c.lr_schedule = "cosine";
  c.lr_scaling = "linear";
  c.lr_reference_batch = 16;
  c.warmup_steps = 300;
  c.epochs = 10;
  c.momentum = 0.9;
  c.loss = "cross-entropy";
  c.dataset = "synthetic";
  c.train_examples = 200;
  c.labels_hash = 0x0123456789ABCDEFull;
  c.history = R"([{"epoch":1,"loss":0.5},{"epoch":2,"loss":0.25}])";
  return c;
}

}  // namespace course::testkit
