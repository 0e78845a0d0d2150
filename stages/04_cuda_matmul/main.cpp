// Stage 04 trainer: the MLP on the GPU, its matrix products on a kernel of your choice.
//
//   s04_train_solution --model mlp --epochs 10            (kernel 6, register tiles)
//   s04_train_solution --model mlp --kernel 0             (cuBLAS)
//   s04_train_exercise --model mlp --kernel 5 --profile   (your code, tiled 32, per-layer GPU times)
//   s04_train_solution --model mlp --graph off            (every kernel launched one by one)
//
// The step (mlp_step.hpp) runs in the one GPU engine (common/gpu/gpu_engine.hpp), which
// replays each full training batch as one CUDA graph unless --graph off or --profile.
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "04_cuda_matmul/gemm.hpp"
#include "04_cuda_matmul/mlp_step.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/gpu/gpu_engine.hpp"
#include "common/train/trainer.hpp"

int main(int argc, char** argv) {
  const course::StageInfo stage{"04_cuda_matmul", "Stage 04: the MLP on the GPU, dense layers as GEMMs"};
  int kernel = course::kBestGemm;
  std::string graph = "on";
  std::string kernel_help = "Matrix-product kernel:";
  for (int k = 0; k < course::kNumGemmKernels; ++k)
    kernel_help +=
        " " + std::to_string(k) + " = " + course::gemm_kernel_name(k) + (k + 1 < course::kNumGemmKernels ? "," : "");
  const auto extra_options = [&](CLI::App& app) {
    app.add_option("--kernel", kernel, kernel_help)->check(CLI::Range(0, course::kNumGemmKernels - 1))->type_name("N");
    app.add_option("--graph", graph,
                   "Replay each training step as one CUDA graph (on) or launch every kernel one by one (off); "
                   "--profile always runs without it")
        ->check(CLI::IsMember({"on", "off"}))
        ->capture_default_str();
    // Checked once the command line is parsed (so --help works anywhere) and
    // before the data is loaded: without a GPU there is nothing to wait for.
    app.final_callback([] {
      std::string why;
      if (!course::gpu_available(&why)) throw course::GpuError("stage 04 trains on a CUDA GPU: " + why);
    });
  };
  return course::run_trainer(
      argc, argv, stage,
      [&](const course::EngineConfig& cfg) {
        auto engine = std::make_unique<course::GpuEngine>(cfg, std::make_unique<course::MlpStep>(cfg, kernel),
                                                          std::vector<course::NamedTensor>{},
                                                          course::GpuEngineOptions{graph == "on"});
        std::cout << "gemm: kernel " << kernel << " (" << course::gemm_kernel_name(kernel) << ")\n";
        std::cout << "graph: " << course::graph_note(*engine, cfg.profile) << "\n";
        return engine;
      },
      extra_options);
}
