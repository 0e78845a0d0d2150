// The engine settings that the stage 02 network tests and the CNN comparisons
// (cnn_comparison.hpp) train with.
#pragma once

#include <string>

#include "common/arch.hpp"
#include "common/engine.hpp"

namespace course::testkit {

/// The model `spec` (an --arch string) on `input`, 10 classes, batches of `batch`, SGD at rate
/// `lr` with momentum 0.9, seed 11.
inline EngineConfig engine_config(const std::string& spec, Shape3 input, int batch, double lr) {
  EngineConfig cfg;
  cfg.arch = parse_arch(spec);
  cfg.input = input;
  cfg.classes = 10;
  cfg.batch = batch;
  cfg.lr = lr;
  cfg.momentum = 0.9;
  cfg.seed = 11;
  return cfg;
}

}  // namespace course::testkit
