// Stage 05 trainer: CNNs (and the MLP) on the GPU, every convolution as im2col + GEMM.
//
//   s05_train_solution --model cnn --epochs 5               (kernel 6, register tiles; the batch unrolled at once)
//   s05_train_solution --model cnn --kernel 0               (cuBLAS for every matrix product)
//   s05_train_solution --model cnn --unroll image --verbose (one image at a time: little memory, many small GEMMs)
//   s05_train_exercise --model cnn-deep --profile           (your code, per-layer GPU times)
//   s05_train_solution --model cnn --graph off              (every kernel launched one by one)
//
// Besides the shared flags: --kernel N (stage 04's GEMM kernels), --unroll
// image|batch, --split-k N and --graph on|off. The run's GEMM, unroll and im2col workspace
// are printed at the start (per conv layer with --verbose) and written to the
// --json file under "stage_results" (CnnStep::stage_results()). The step runs in the one GPU engine
// (common/gpu/gpu_engine.hpp), which replays each full batch as one CUDA graph..
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "04_cuda_matmul/gemm.hpp"
#include "05_im2col_gemm/cnn_step.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/gpu/gpu_engine.hpp"
#include "common/train/trainer.hpp"

namespace {

std::string megabytes(std::size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f MB", static_cast<double>(bytes) / 1e6);
  return text;
}

// What this run's step is made of, printed at the start (the step's stage_results()
// puts the same facts in the --json file).
void describe(const course::CnnStep& engine, int batch, bool verbose) {
  const course::GpuCnnOptions& o = engine.options();
  const std::vector<course::ConvMemory> convs = engine.conv_memory();
  std::cout << "gemm: kernel " << o.gemm_kernel << " (" << course::gemm_kernel_name(o.gemm_kernel) << ")";
  if (!convs.empty()) {
    std::cout << ", unroll " << course::unroll_name(o.unroll);
    if (o.unroll == course::Unroll::Batch) {
      const int chunks = engine.split_k_chunks_used();
      std::cout << ", weight gradients " << (chunks > 1 ? "in up to " + std::to_string(chunks) + " split-K chunks"
                                                        : std::string("as one GEMM"));
    }
    std::cout << "\nim2col workspace: " << megabytes(engine.workspace_bytes()) << " (" << engine.workspace_bytes()
              << " bytes, shared by the " << convs.size() << " conv layers, batch " << batch << ")";
  }
  std::cout << "\n";
  if (!verbose) return;
  for (const course::ConvMemory& m : convs) {
    const double ratio = static_cast<double>(m.unrolled_floats) / static_cast<double>(m.input_floats);
    char line[256];
    std::snprintf(line, sizeof line, "  %-22s input %7ld floats/image, unrolled %8ld (%.2fx), workspace %s\n",
                  m.layer.c_str(), m.input_floats, m.unrolled_floats, ratio,
                  megabytes(m.workspace_floats * sizeof(float)).c_str());
    std::cout << line;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const course::StageInfo stage{"05_im2col_gemm", "Stage 05: CNNs on the GPU, convolutions as im2col + GEMM"};
  course::GpuCnnOptions options;
  std::string unroll = "batch", graph = "on";
  std::string kernel_help = "Matrix-product kernel (stage 04):";
  for (int k = 0; k < course::kNumGemmKernels; ++k)
    kernel_help += " " + std::to_string(k) + " = " + course::gemm_kernel_name(k) + (k + 1 < course::kNumGemmKernels ? "," : "");
  const auto extra_options = [&](CLI::App& app) {
    app.add_option("--kernel", options.gemm_kernel, kernel_help)
        ->check(CLI::Range(0, course::kNumGemmKernels - 1))
        ->type_name("N");
    app.add_option("--unroll", unroll,
                   "How conv layers unroll their input: batch (the whole batch at once, one big GEMM per product) "
                   "or image (one image at a time into a small reused workspace)")
        ->check(CLI::IsMember({"image", "batch"}))
        ->type_name("HOW");
    app.add_option("--split-k", options.split_k,
                   "Most chunks a conv weight gradient's sum over the batch is split into, all in one launch "
                   "(--unroll batch with kernel 6; 1 = one GEMM)")
        ->check(CLI::Range(1, 1024))
        ->type_name("N");
    app.add_option("--graph", graph,
                   "Replay each training step as one CUDA graph (on) or launch every kernel one by one (off); "
                   "--profile always runs without it")
        ->check(CLI::IsMember({"on", "off"}))
        ->capture_default_str();
    // Checked once the command line is parsed (so --help works anywhere) and
    // before the data is loaded: without a GPU there is nothing to wait for.
    app.final_callback([] {
      std::string why;
      if (!course::gpu_available(&why)) throw course::GpuError("stage 05 trains on a CUDA GPU, and there is none: " + why);
    });
  };
  return course::run_trainer(
      argc, argv, stage,
      [&](const course::EngineConfig& cfg) {
        options.unroll = course::parse_unroll(unroll);
        auto step = std::make_unique<course::CnnStep>(cfg, options);
        const course::CnnStep& cnn = *step;
        auto engine = std::make_unique<course::GpuEngine>(cfg, std::move(step), std::vector<course::NamedTensor>{},
                                                          course::GpuEngineOptions{graph == "on"});
        describe(cnn, cfg.batch, cfg.verbose);
        std::cout << "graph: " << course::graph_note(*engine, cfg.profile) << "\n";
        return engine;
      },
      extra_options);
}
