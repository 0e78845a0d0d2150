// Stage 06 trainer: any model of the course on cuDNN and cuBLAS, each training
// step replayed as one CUDA graph. The step (CudnnStep, cudnn_step.hpp) runs in the
// one GPU engine (common/gpu/gpu_engine.hpp).
//
//   s06_train_solution --model cnn --epochs 10               (the graph on: the default)
//   s06_train_solution --model cnn --graph off               (every call launched one by one)
//   s06_train_solution --model cnn-deep --profile --epochs 1 (per-layer GPU times; runs without the graph)
//   s06_train_solution --model cnn --verbose                 (also the conv algorithms cudnnFind chose)
//   s06_train_solution --model cnn --conv-algos direct       (direct sums only, no FFT or Winograd: slower)
//   s06_train_solution --model cnn --conv-algos fastest      (atomics allowed too: not the same bits twice)
//   s06_train_solution --model cnn --conv-algos-from run.ckpt (the algorithms that run chose, not measured)
//   s06_train_exercise --model mlp                           (your code, from exercises/)
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "06_cudnn/cudnn_step.hpp"
#include "common/train/checkpoint.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/gpu/gpu_engine.hpp"
#include "common/train/trainer.hpp"

int main(int argc, char** argv) {
  const course::StageInfo stage{"06_cudnn", "Stage 06: cuDNN and cuBLAS, the training step as one CUDA graph"};
  std::string graph = "on", algos = "deterministic", algos_from;
  const auto extra_options = [&](CLI::App& app) {
    app.add_option("--graph", graph,
                   "Replay each training step as one CUDA graph (on) or launch every call one by one (off); "
                   "--profile always runs without it")
        ->check(CLI::IsMember({"on", "off"}))
        ->capture_default_str();
    app.add_option("--conv-algos", algos,
                   "Which conv algorithms cudnnFind may choose: deterministic (the same bits every run; FFT and "
                   "Winograd allowed), direct (deterministic direct sums only, as the other stages add) or fastest "
                   "(atomics allowed too)")
        ->check(CLI::IsMember({"deterministic", "direct", "fastest"}))
        ->capture_default_str();
    app.add_option("--conv-algos-from", algos_from,
                   "Run the conv algorithms that checkpoint FILE records instead of measuring them (what --resume "
                   "does with its checkpoint): a new run that rounds as that run did")
        ->check(CLI::ExistingFile);
    // Checked once the command line is parsed (so --help works anywhere) and
    // before the data is loaded: without a GPU there is nothing to wait for.
    app.final_callback([] {
      std::string why;
      if (!course::gpu_available(&why)) throw course::GpuError("stage 06 trains on a CUDA GPU, and there is none: " + why);
    });
  };
  return course::run_trainer(
      argc, argv, stage,
      [&](const course::EngineConfig& given) {
        course::EngineConfig cfg = given;  // with --resume, the checkpoint's engine state
        if (!algos_from.empty()) {
          const auto from = course::load_checkpoint(algos_from).engine_state;
          const auto record = from.find(course::kAlgorithmRecordName);
          if (record == from.end())
            std::cerr << "warning: --conv-algos-from " << algos_from
                      << " records no conv algorithms (a checkpoint of a model without conv layers, or of an older"
                      << " build): they are measured\n";
          else
            cfg.engine_state[record->first] = record->second;  // replaces what --resume's checkpoint holds
        }
        auto step = std::make_unique<course::CudnnStep>(cfg, course::parse_algo_rule(algos));
        const course::CudnnStep& cudnn = *step;
        auto engine = std::make_unique<course::GpuEngine>(cfg, std::move(step), std::vector<course::NamedTensor>{},
                                                          course::GpuEngineOptions{graph == "on"});
        std::cout << "conv algorithms: " << algos << "\n";
        const std::string recorded = cudnn.recorded_algorithms_note();
        if (!recorded.empty())
          std::cout << "conv algorithms recorded by " << (algos_from.empty() ? "the checkpoint" : algos_from) << ": "
                    << recorded << "\n";
        std::cout << "graph: " << (engine->graph_enabled() ? "on, one CUDA graph replay per full batch"
                                                           : cfg.profile ? "off (--profile times every layer uncaptured)"
                                                                         : "off, every call launched one by one")
                  << "\n";
        if (cfg.verbose) std::cout << cudnn.algorithm_report();
        return engine;
      },
      extra_options);
}
