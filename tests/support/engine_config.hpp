// The EngineConfig a test starts from: the model, the shape of one example, the number of
// classes and the batch size; a test then sets what else it needs (lr, seed, loss, ...).
#pragma once

#include <string>

#include "common/arch.hpp"
#include "common/engine.hpp"

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

}  // namespace course::testkit
