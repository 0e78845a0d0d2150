// Stage 06's engine as its trainer builds it, for the tests: the common GPU engine
// (common/gpu/gpu_engine.hpp) on a CudnnStep, with the step's reports at hand.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "06_cudnn/cudnn_step.hpp"
#include "common/gpu/gpu_engine.hpp"

namespace course {

class CudnnStepEngine : public GpuEngine {
 public:
  explicit CudnnStepEngine(const EngineConfig& cfg, bool graph = true, const std::vector<NamedTensor>& initial = {},
                           AlgoRule rule = AlgoRule::Deterministic)
      : GpuEngine(cfg, std::make_unique<CudnnStep>(cfg, rule), initial, GpuEngineOptions{graph}) {}
  const CudnnStep& cudnn() const { return static_cast<const CudnnStep&>(step()); }
  std::string algorithm_report() const { return cudnn().algorithm_report(); }
  std::string recorded_algorithms_note() const { return cudnn().recorded_algorithms_note(); }
};

}  // namespace course
