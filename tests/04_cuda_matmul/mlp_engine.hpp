// Stage 04's tests: the one GPU engine running stage 04's MLP step, as the trainer builds it.
#pragma once

#include <memory>
#include <vector>

#include "04_cuda_matmul/gemm.hpp"
#include "04_cuda_matmul/mlp_step.hpp"
#include "common/gpu/gpu_engine.hpp"

namespace course::gputest {

/// GpuEngine(cfg, MlpStep(cfg, kernel), initial) with the CUDA graph on or off (a prvalue:
/// `GpuEngine e = mlp_engine(cfg);`). MlpStep's refusals come first, before any GPU work.
inline GpuEngine mlp_engine(const EngineConfig& cfg, int kernel = kBestGemm,
                            const std::vector<NamedTensor>& initial = {}, bool graph = true) {
  return GpuEngine(cfg, std::make_unique<MlpStep>(cfg, kernel), initial, GpuEngineOptions{graph});
}

}  // namespace course::gputest
