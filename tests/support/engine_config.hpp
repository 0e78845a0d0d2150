// The EngineConfig a test starts from: the model, the shape of one example, the number of
// classes and the batch size (a test then sets what else it needs: lr, seed, loss, ...); and
// the SGD settings that the stage 02 network tests and the CNN comparisons
// (cnn_comparison.hpp) train with.
#pragma once

#include <string>

#include "common/model/arch.hpp"
#include "common/train/engine.hpp"

namespace course::testkit {

/// An EngineConfig for the model `spec` on examples of `input` in `classes` classes, batches
/// of `batch`; everything else EngineConfig's defaults.
inline EngineConfig engine_config(const std::string& spec, Shape3 input, int classes, int batch) {
  EngineConfig cfg;
  cfg.arch = parse_arch(spec);
  cfg.input = input;
  cfg.classes = classes;
  cfg.batch = batch;
  return cfg;
}

/// The model `spec` (an --arch string) on `input`, 10 classes, batches of `batch`, SGD at rate
/// `lr` with momentum 0.9, seed 11.
inline EngineConfig sgd_config(const std::string& spec, Shape3 input, int batch, double lr) {
  EngineConfig cfg = engine_config(spec, input, 10, batch);
  cfg.lr = lr;
  cfg.momentum = 0.9;
  cfg.seed = 11;
  return cfg;
}

}  // namespace course::testkit
