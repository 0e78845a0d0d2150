/// @file fast_gemm_step.hpp
/// @brief Stage 07: stage 05's step on this stage's kernels, and what a run reports (glue, not a task).
///
/// Stage 07 writes no training step of its own: every product of stage 05's step
/// (conv layers as im2col + GEMM, dense layers, every gradient) goes through
/// course::gemm(), so choosing kernel 9 or 12 there is all it takes to train on
/// them, and the GPU engine (common/gpu/gpu_engine.hpp) gives the step its CUDA graph.
/// Precision follows from the kernel (gemm_precision()): with kernels 11 and 12 the
/// products round their operands to TF32 or BF16 and add in FP32, while the weights,
/// their velocities, the activations and the loss stay FP32 (mixed precision with FP32
/// master weights; BF16 keeps FP32's exponent range, so no loss scaling).
#pragma once

#include <nlohmann/json.hpp>

#include "05_im2col_gemm/cnn_step.hpp"
#include "07_fast_gemm/autotune.hpp"
#include "07_fast_gemm/fast_gemm.hpp"

namespace course {

class FastGemmStep : public CnnStep {
 public:
  /// Registers kernels 7 to 16 with course::gemm() and builds stage 05's step on `options`.
  FastGemmStep(const EngineConfig& cfg, const GpuCnnOptions& options) : CnnStep(registered(cfg), options) {}

  /// The precision of the kernel that runs here (kernel_that_runs(): on a GPU without TF32 or BF16
  /// mma, kernels 11 and 12 hand their products to FP32 kernels).
  Precision precision() const { return gemm_precision(kernel_that_runs(options().gemm_kernel)); }

  /// The kernel asked for and, where this GPU lacks what it needs, what runs instead and why.
  std::vector<std::string> gpu_choices() const override { return kernel_choice_notes(options().gemm_kernel); }

  /// Stage 05's facts plus the precision and, for kernel 10, the tile sizes chosen per shape.
  nlohmann::json stage_results() const override {
    nlohmann::json j = CnnStep::stage_results();
    j["precision"] = precision_name(precision());
    j["kernel_that_runs"] = kernel_that_runs(options().gemm_kernel);
    if (kernel_that_runs(options().gemm_kernel) == kGemmAutotuned) {
      j["autotune"] = nlohmann::json::array();
      const Autotuner& tuner = kernel10_autotuner();
      for (const auto& [key, result] : tuner.choices())
        j["autotune"].push_back({{"product", key.str()},
                                 {"choice", tuner.candidates()[static_cast<std::size_t>(result.choice)].sizes.str()},
                                 {"microseconds", result.ms * 1e3},
                                 {"rejected", result.rejected}});
    }
    return j;
  }

 private:
  /// cfg, once the kernels are known to gemm(): stage 05's constructor checks the kernel number.
  static const EngineConfig& registered(const EngineConfig& cfg) {
    register_fast_gemm_kernels();
    return cfg;
  }
};

}  // namespace course
