// Stage 05's tests: the one GPU engine running stage 05's CNN step, as the trainer builds it.
#pragma once

#include <memory>
#include <vector>

#include "05_im2col_gemm/cnn_step.hpp"
#include "common/gpu/gpu_engine.hpp"

namespace course {

/// GpuEngine(cfg, CnnStep(cfg, options), initial) with the CUDA graph on or off (a prvalue:
/// `GpuEngine e = cnn_engine(cfg);`). CnnStep's refusals come first, before any GPU work.
inline GpuEngine cnn_engine(const EngineConfig& cfg, const GpuCnnOptions& options = {},
                            const std::vector<NamedTensor>& initial = {}, bool graph = true) {
  return GpuEngine(cfg, std::make_unique<CnnStep>(cfg, options), initial, GpuEngineOptions{graph});
}

}  // namespace course
