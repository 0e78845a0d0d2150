// The engines that evaluate a `cnn` model file a later GPU stage saved (the trainer
// tests of stages 06 and 08): stage 02 on the CPU, and stage 05 (im2col) on the GPU.
#pragma once

#include <memory>

#include "01_fc_softmax/cpu_engine.hpp"
#include "02_conv_pool/cnn.hpp"
#include "05_im2col_gemm/cnn_step.hpp"
#include "common/gpu/gpu_engine.hpp"
#include "model_across_stages.hpp"

namespace course::trainer_run {

inline StageEngine stage02_loader() {
  return {{"02_conv_pool", "Stage 02 (test)"}, [](const EngineConfig& cfg) -> std::unique_ptr<Engine> {
            return std::make_unique<CpuEngine>(cfg, make_cnn_layer<float>);
          }};
}

inline StageEngine stage05_loader() {
  return {{"05_im2col_gemm", "Stage 05 (test)"}, [](const EngineConfig& cfg) -> std::unique_ptr<Engine> {
            return std::make_unique<GpuEngine>(cfg, std::make_unique<CnnStep>(cfg));
          }};
}

}  // namespace course::trainer_run
