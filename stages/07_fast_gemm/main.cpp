// Stage 07 trainer: stage 05's step on the fast GEMM kernels and the tensor cores, in the one GPU engine.
//
//   s07_train_solution --model cnn                       (kernel 10: autotuned FP32; the choices are printed)
//   s07_train_solution --model cnn --precision bf16      (kernel 12: BF16 tensor cores, FP32 weights and loss)
//   s07_train_solution --model mlp --precision tf32      (kernel 11: TF32 tensor cores)
//   s07_train_solution --model mlp --kernel 8            (any of gemm()'s kernels, 0 to 16)
//   s07_train_exercise --model cnn --kernel 9            (your kernels, from exercises/)
//   s07_train_solution --model cnn --graph off           (every kernel launched one by one)
//
// Besides the shared flags: --kernel N, --precision fp32|tf32|bf16 and --graph on|off. A precision
// picks its default kernel; a kernel of another precision than the one asked for is
// refused. The kernel, the precision and (kernel 10) every tuned choice go to the
// --json file under "stage_results".
#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "05_im2col_gemm/cnn_step.hpp"
#include "07_fast_gemm/fast_gemm.hpp"
#include "07_fast_gemm/fast_gemm_step.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/gpu/gpu_engine.hpp"
#include "common/train/trainer.hpp"

int main(int argc, char** argv) {
  const course::StageInfo stage{"07_fast_gemm", "Stage 07: warp tiles, asynchronous copies and tensor cores"};
  course::register_fast_gemm_kernels();  // kernel numbers 7 to 12, for --help and the checks
  int kernel = -1;
  std::string precision, graph = "on";
  std::string kernel_help = "Matrix-product kernel:";
  for (int k = 0; k < course::gemm_kernel_count(); ++k)
    kernel_help += " " + std::to_string(k) + " = " + course::gemm_kernel_name(k) + (k + 1 < course::gemm_kernel_count() ? "," : "");
  kernel_help += " (default: the precision's: 10, 11 or 12)";
  const auto extra_options = [&](CLI::App& app) {
    app.add_option("--kernel", kernel, kernel_help)->check(CLI::Range(0, course::gemm_kernel_count() - 1))->type_name("N");
    app.add_option("--precision", precision,
                   "What the matrix products round their operands to: fp32 (default), tf32 or bf16; sums, weights "
                   "and the loss stay FP32")
        ->check(CLI::IsMember({"fp32", "tf32", "bf16"}))
        ->type_name("P");
    app.add_option("--graph", graph,
                   "Replay each training step as one CUDA graph (on) or launch every kernel one by one (off); "
                   "--profile always runs without it")
        ->check(CLI::IsMember({"on", "off"}))
        ->capture_default_str();
    // Checked once the command line is parsed (so --help works anywhere) and before the data is loaded.
    app.final_callback([&] {
      if (kernel >= 0 && !precision.empty() &&
          course::gemm_precision(kernel) != course::parse_precision(precision))
        throw CLI::ValidationError("--kernel " + std::to_string(kernel) + " (" + course::gemm_kernel_name(kernel) +
                                   ") computes in " + course::precision_name(course::gemm_precision(kernel)) +
                                   ", not " + precision + ": leave out one of --kernel and --precision");
      std::string why;
      if (!course::gpu_available(&why)) throw course::GpuError("stage 07 trains on a CUDA GPU, and there is none: " + why);
    });
  };
  return course::run_trainer(
      argc, argv, stage,
      [&](const course::EngineConfig& cfg) {
        course::GpuCnnOptions options;
        options.gemm_kernel =
            kernel >= 0 ? kernel : course::default_kernel(course::parse_precision(precision.empty() ? "fp32" : precision));
        auto step = std::make_unique<course::FastGemmStep>(cfg, options);
        const course::Precision precision_used = step->precision();
        auto engine = std::make_unique<course::GpuEngine>(cfg, std::move(step), std::vector<course::NamedTensor>{},
                                                          course::GpuEngineOptions{graph == "on"});
        std::cout << "gemm: kernel " << options.gemm_kernel << " (" << course::gemm_kernel_name(options.gemm_kernel)
                  << "), precision " << course::precision_name(precision_used)
                  << (precision_used == course::Precision::FP32
                          ? ""
                          : ": products of operands rounded to " + course::precision_name(precision_used) +
                                ", FP32 sums, FP32 weights, activations and loss")
                  << "\n";
        std::cout << "graph: " << course::graph_note(*engine, cfg.profile) << "\n";
        return engine;
      },
      extra_options);
}
