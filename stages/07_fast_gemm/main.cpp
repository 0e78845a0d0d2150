// Stage 07 trainer: stage 05's GPU engine on the fast GEMM kernels and the tensor cores.
//
//   s07_train_solution --model cnn                       (kernel 10: autotuned FP32; the choices are printed)
//   s07_train_solution --model cnn --precision bf16      (kernel 12: BF16 tensor cores, FP32 weights and loss)
//   s07_train_solution --model mlp --precision tf32      (kernel 11: TF32 tensor cores)
//   s07_train_solution --model mlp --kernel 8            (any of gemm()'s kernels, 0 to 16)
//   s07_train_exercise --model cnn --kernel 9            (your kernels, from exercises/)
//
// Besides the shared flags: --kernel N and --precision fp32|tf32|bf16. A precision
// picks its default kernel; a kernel of another precision than the one asked for is
// refused. The kernel, the precision and (kernel 10) every tuned choice go to the
// --json file under "stage_results".
#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "05_im2col_gemm/gpu_cnn_engine.hpp"
#include "07_fast_gemm/fast_gemm.hpp"
#include "07_fast_gemm/fast_gemm_engine.hpp"
#include "common/cuda_check.hpp"
#include "common/trainer.hpp"

int main(int argc, char** argv) {
  const course::StageInfo stage{"07_fast_gemm", "Stage 07: warp tiles, asynchronous copies and tensor cores"};
  course::register_fast_gemm_kernels();  // kernel numbers 7 to 12, for --help and the checks
  int kernel = -1;
  std::string precision;
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
        auto engine = std::make_unique<course::FastGemmEngine>(cfg, options);
        std::cout << "gemm: kernel " << options.gemm_kernel << " (" << course::gemm_kernel_name(options.gemm_kernel)
                  << "), precision " << course::precision_name(engine->precision())
                  << (engine->precision() == course::Precision::FP32
                          ? ""
                          : ": products of operands rounded to " + course::precision_name(engine->precision()) +
                                ", FP32 sums, FP32 weights, activations and loss")
                  << "\n";
        return engine;
      },
      extra_options);
}
