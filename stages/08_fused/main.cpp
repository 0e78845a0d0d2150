// Stage 08 trainer: the training step in a few fused kernels of our own, replayed as one
// CUDA graph (or run as one persistent kernel).
//
//   s08_train_solution --model cnn --epochs 15            (the graph on: the default)
//   s08_train_solution --model cnn --verbose              (also the step's kernels and what each reads and writes)
//   s08_train_solution --model cnn --graph off            (every kernel launched one by one)
//   s08_train_solution --model cnn --persistent           (each step one cooperative launch of the persistent kernel)
//   s08_train_solution --model cnn-deep --profile         (per fused layer GPU times; runs without the graph)
//   s08_train_solution --model mlp --dense-chain off       (the mlp with Tasks 8.4 to 8.7's kernels, not the chain)
//   s08_train_exercise --model mlp                        (your code, from exercises/)
//
// Stage 08 runs the specs its kernels fuse (solutions/08_fused/fused_plan.hpp): conv
// (stride 1, 1x1, 3x3 or 5x5) + activation + max-pool 2, dense + activation, the last
// dense layer with the loss. Any other spec is refused with the layer named (exit 2).
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "08_fused/fused_step.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/train/trainer.hpp"

int main(int argc, char** argv) {
  const course::StageInfo stage{"08_fused", "Stage 08: the training step in a few fused kernels, in one CUDA graph"};
  std::string graph = "on";
  bool persistent = false;
  std::string early_launch = "on";
  std::string dense_chain = "on";
  const auto extra_options = [&](CLI::App& app) {
    app.add_option("--graph", graph,
                   "Replay each training step as one CUDA graph (on) or launch its kernels one by one (off); "
                   "--profile and --persistent run without it")
        ->check(CLI::IsMember({"on", "off"}))
        ->capture_default_str();
    app.add_flag("--persistent", persistent,
                 "Run each training step as one persistent kernel (a cooperative launch, the phases apart by "
                 "grid-wide barriers) instead of a graph of kernels");
    app.add_option("--early-launch", early_launch,
                   "Let each kernel of the step be scheduled while the one before it finishes (programmatic "
                   "dependent launch; on sm_90 and later GPUs, ignored before; it waits for that kernel's results "
                   "before it reads)")
        ->check(CLI::IsMember({"on", "off"}))
        ->capture_default_str();
    app.add_option("--dense-chain", dense_chain,
                   "Train a model of dense layers only (the mlp) as the dense chain: two kernels a step, the first in "
                   "thread block clusters (on; sm_90 and later, not with --persistent or --profile), or with the "
                   "kernels of Tasks 8.4 to 8.7 (off)")
        ->check(CLI::IsMember({"on", "off"}))
        ->capture_default_str();
    // Checked once the command line is parsed (so --help works anywhere) and
    // before the data is loaded: without a GPU there is nothing to wait for.
    app.final_callback([] {
      std::string why;
      if (!course::gpu_available(&why)) throw course::GpuError("stage 08 trains on a CUDA GPU, and there is none: " + why);
    });
  };
  return course::run_trainer(
      argc, argv, stage,
      [&](const course::EngineConfig& cfg) {
        course::FusedOptions options;
        options.graph = graph == "on";
        options.persistent = persistent;
        options.early_launch = early_launch == "on";
        options.dense_chain = dense_chain == "on";
        auto engine = course::make_fused_engine(cfg, options);
        const course::FusedStep& step = course::fused_step(*engine);
        std::cout << "fused step: " << step.kernels_per_step() << " kernel" << (step.kernels_per_step() == 1 ? "" : "s")
                  << " per step, ";
        if (step.persistent_enabled())
          std::cout << "one persistent kernel of " << step.persistent_grid() << " blocks";
        else if (engine->graph_enabled())
          std::cout << "one CUDA graph replay per full batch";
        else
          std::cout << (cfg.profile ? "launched one by one (--profile times every kernel)" : "launched one by one");
        if (step.early_launch_enabled()) std::cout << ", each kernel launched early";
        if (step.dense_chain_enabled()) std::cout << ", the dense chain (thread block clusters)";
        std::cout << "\n";
        if (cfg.verbose) std::cout << step.step_table();
        return engine;
      },
      extra_options);
}
