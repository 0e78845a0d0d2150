// Stage 09 trainer: data-parallel training on NCCL, one process per GPU, each rank
// the one GPU engine (common/gpu/gpu_engine.hpp) on a step model: stage 08's fused
// step by default (the fastest), or, with --step, stage 06's cuDNN step, stage 05's
// im2col + GEMM step or stage 07's fast GEMMs on it. --batch is the global batch in every case.
//
//   s09_train_solution --model cnn --epochs 10                    one GPU, no launcher (rank 0 of 1)
//   s09_train_solution --model cnn --gpus 2 --batch 128           two processes, 64 examples each per step
//   s09_train_solution --model cnn --gpus 1 --spawn               the multi-process path, on one GPU
//   s09_train_solution --model cnn --gpus 2 --allreduce flat      one all-reduce after the backward pass
//   s09_train_solution --model cnn --gpus 2 --allreduce peer      one kernel sums over NVLink (one host)
//   s09_train_solution --model cnn --gpus 2 --profile --epochs 1  per-layer times, and the all-reduce's
//   s09_train_solution --model cnn --gpus 2 --step cudnn          stage 06's cuDNN step on each rank
//   mpirun -np 2 s09_train_solution --model cnn --nccl-id-file /shared/run.id   ranks started by Open MPI
//   s09_train_exercise --model cnn                                your code, from exercises/
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "05_im2col_gemm/cnn_step.hpp"
#include "06_cudnn/cudnn_step.hpp"
#include "08_fused/fused_step.hpp"
#include "07_fast_gemm/fast_gemm_step.hpp"
#include "common/multi_gpu/bootstrap.hpp"
#include "09_multi_gpu/communicator.hpp"
#include "09_multi_gpu/data_parallel_engine.hpp"
#include "common/multi_gpu/launcher.hpp"
#include "common/multi_gpu/multi_gpu_options.hpp"
#include "common/multi_gpu/rank_output.hpp"
#include "09_multi_gpu/shard_plan.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/gpu/gpu_engine.hpp"
#include "common/train/trainer.hpp"

namespace {

const course::StageInfo kStage{"09_multi_gpu", "Stage 09: data-parallel training on NCCL, one process per GPU"};

// This executable's path, for the ranks the launcher starts.
std::string own_program(const char* argv0) {
  char path[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return argv0;
  path[n] = '\0';
  return path;
}

// Starts the ranks and waits for them (common/multi_gpu/launcher.hpp).
int launch(int argc, char** argv, const course::MultiGpuOptions& mg) {
  try {
    const int ranks = mg.gpus > 0 ? mg.gpus : 1;
    int visible = 0;
    if (cudaGetDeviceCount(&visible) != cudaSuccess) visible = 0;
    course::check_gpu_count(ranks, visible, std::getenv("CUDA_VISIBLE_DEVICES"));
    course::LaunchRequest request;
    request.ranks = ranks;
    request.program = own_program(argv[0]);
    request.args.assign(argv, argv + argc);
    return course::launch_ranks(request, std::cout, std::cerr);
  } catch (const course::LaunchError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return course::kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return course::kExitError;
  }
}

// The step models a rank can run (--step), the default first.
const std::vector<std::string> kSteps = {"fused", "cudnn", "im2col", "fast-gemm"};

std::string step_names() {
  std::string names;
  for (const std::string& s : kSteps) names += (names.empty() ? "" : ", ") + s;
  return names;
}

// A rank's step model for its share `local` of the run, and what it prints about it.
std::unique_ptr<course::StepModel> make_step(const std::string& name, const course::EngineConfig& local,
                                             const course::MultiGpuOptions& mg, std::string* about) {
  if (name == "fused") {
    *about = "step: fused (stage 08: a few fused kernels a step; the specs stage 08 fuses)\n";
    try {
      return std::make_unique<course::FusedStep>(local);
    } catch (const std::invalid_argument& e) {  // a spec stage 08 does not fuse: say what runs it
      throw std::invalid_argument(std::string(e.what()) + " (--step cudnn runs any spec)");
    }
  }
  if (name == "cudnn") {
    *about = "step: cudnn (stage 06: cuDNN and cuBLAS)\nconv algorithms: " + mg.conv_algos + "\n";
    return std::make_unique<course::CudnnStep>(local, course::parse_algo_rule(mg.conv_algos));
  }
  course::GpuCnnOptions options;  // stage 05's defaults: its best kernel, the batch unrolled at once
  if (name == "im2col") {
    *about = "step: im2col (stage 05: im2col + GEMM, kernel " + std::to_string(options.gemm_kernel) + ", " +
             course::gemm_kernel_name(options.gemm_kernel) + ")\n";
    return std::make_unique<course::CnnStep>(local, options);
  }
  if (name == "fast-gemm") {
    options.gemm_kernel = course::default_kernel(course::Precision::FP32);
    auto step = std::make_unique<course::FastGemmStep>(local, options);  // registers stage 07's kernels first
    *about = "step: fast-gemm (stage 05's step on stage 07's kernel " + std::to_string(options.gemm_kernel) + ", " +
             course::gemm_kernel_name(options.gemm_kernel) + ")\n";
    return step;
  }
  throw std::invalid_argument("unknown step '" + name + "' (stage 09 runs " + step_names() + ")");
}

// One line about the run, printed by rank 0.
std::string describe_run(const course::RankPlace& me, const course::EngineConfig& cfg,
                         course::DataParallelEngine& engine, const course::MultiGpuOptions& mg) {
  const course::ShardPlan plan(0, cfg.batch, me.world);
  std::string shares;
  for (int r = 0; r < me.world; ++r) shares += (r ? " + " : "") + std::to_string(plan.local_batch(r));
  std::string line = "ranks: " + std::to_string(me.world) +
                     (me.started_by.empty() ? " (this process alone)"
                                            : ", one process per GPU, started by " + me.started_by) +
                     "; global batch " + std::to_string(cfg.batch) + (me.world > 1 ? " = " + shares : "") + "\n";
  const nlohmann::json facts = engine.stage_results();
  line += "nccl: " + facts.at("nccl_library").get<std::string>() + " (header " +
          facts.at("nccl_header").get<std::string>() + "), NCCL_NVLS_ENABLE=" +
          facts.at("nccl_nvls_enable").get<std::string>() + "\n";
  const std::string schedule = facts.at("allreduce").get<std::string>();  // what --allreduce auto chose
  if (schedule == "flat") {
    line += "all-reduce: flat, one call of " + std::to_string(facts.at("gradient_bytes").get<long>() / 1024) +
            " KiB after the backward pass\n";
  } else if (schedule == "peer") {
    line += "all-reduce: peer, one kernel of " + std::to_string(facts.at("gradient_bytes").get<long>() / 1024) +
            " KiB after the backward pass, writing into the other GPUs' memory (no NCCL call)\n";
  } else {
    line += "all-reduce: " + std::to_string(facts.at("buckets").size()) + " bucket(s) of at least " +
            std::to_string(mg.bucket_kib) + " KiB on a second stream, during the backward pass:";
    for (const auto& b : facts.at("buckets"))
      line += " " + b.at("layers").get<std::string>() + " (" + std::to_string(b.at("bytes").get<long>() / 1024) +
              " KiB)";
    line += "\n";
  }
  line += std::string("graph: ") +
          (engine.local().graph_enabled() ? "on, one CUDA graph replay per full step, all-reduce included"
           : cfg.profile                  ? "off (--profile times every layer uncaptured)"
                                          : "off, every call launched one by one") +
          "\n";
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  course::keep_nvlink_multicast_off();  // before any NCCL call, here or in a rank this process starts

  // Where this process stands: a rank (its environment says so), or started by a person.
  std::optional<course::RankPlace> place;
  try {
    place = course::rank_place_from_env([](const char* name) -> const char* { return std::getenv(name); });
  } catch (const course::LaunchError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return course::kExitUsage;
  }
  course::MultiGpuOptions mg;
  std::string step_name = kSteps.front();
  const auto stage_options = [&](CLI::App& app) {
    course::add_multi_gpu_options(app, mg, place);
    app.add_option("--step", step_name,
                   "The step model each rank trains: fused (stage 08's fused kernels: the fastest, for the specs "
                   "stage 08 fuses), cudnn (stage 06's cuDNN and cuBLAS: any spec), im2col (stage 05's im2col + "
                   "GEMM) or fast-gemm (stage 05's step on stage 07's fastest FP32 kernel)")
        ->check([](const std::string& name) {
          for (const std::string& s : kSteps)
            if (name == s) return std::string();
          return "unknown step '" + name + "': stage 09 runs " + step_names();
        })
        ->capture_default_str();
  };

  // Started by a person: look at the command line first. Asked for several GPUs
  // (or --spawn), this process only launches the ranks. A command line with a
  // mistake, or --help, goes on to the trainer, which says so.
  if (!place) {
    course::TrainerOptions ignored;
    std::ostringstream quiet;
    bool runs = false;
    try {
      runs = !course::parse_trainer_options(argc, argv, kStage, ignored, stage_options, quiet, quiet).has_value();
    } catch (const std::exception&) {
    }
    if (runs && course::process_role(place, mg) == course::ProcessRole::Launcher) return launch(argc, argv, mg);
  }

  // A rank, or a process alone: rank 0 of 1.
  const course::RankPlace me = place ? *place : course::RankPlace{};
  const course::RankOutput output(me.rank);  // ranks but 0: quiet stdout, stderr prefixed "rank R: "
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) == cudaSuccess && gpus > 0) {
    // A cluster's launcher may give each task its own GPU (Slurm's --gpus-per-task=1 sets
    // CUDA_VISIBLE_DEVICES per task): then the one GPU this task sees is its device 0.
    const int device = course::rank_device(me, gpus);
    if (device < 0) {
      std::cerr << "error: rank " << me.rank << " is local rank " << me.local_rank << " of its host, but CUDA shows "
                << gpus << " GPU" << (gpus == 1 ? "" : "s") << " there\n";
      return course::kExitUsage;
    }
    if (cudaSetDevice(device) != cudaSuccess) {
      std::cerr << "error: cudaSetDevice(" << device << ") failed for rank " << me.rank << "\n";
      return course::kExitError;
    }
  }  // no GPU at all: the trainer's check says so once the command line is read

  return course::run_trainer(
      argc, argv, kStage,
      [&](const course::EngineConfig& cfg) -> std::unique_ptr<course::Engine> {
        const course::ShardPlan plan(0, cfg.batch, me.world);  // a global batch too small for the ranks: usage
        course::EngineConfig local = cfg;
        local.batch = plan.local_batch(me.rank);
        const std::string id_file = !mg.nccl_id_file.empty() ? mg.nccl_id_file : me.id_file;
        auto comm = std::make_unique<course::Communicator>(course::share_unique_id(me, id_file, mg.nccl_timeout_s),
                                                           me.rank, me.world, mg.nccl_timeout_s);
        if (me.rank == 0 && me.world > 1 && !id_file.empty())
          std::remove(id_file.c_str());  // every rank has joined: the id is spent
        std::string about;
        std::unique_ptr<course::StepModel> step = make_step(step_name, local, mg, &about);
        const auto* cudnn = dynamic_cast<const course::CudnnStep*>(step.get());
        // Alone, the fused step runs as stage 08 does (no sync between its kernels); the others take the
        // path of many ranks, so their one-GPU figure holds what the all-reduce costs.
        auto engine = std::make_unique<course::DataParallelEngine>(
            std::make_unique<course::GpuEngine>(local, std::move(step), std::vector<course::NamedTensor>{},
                                                course::GpuEngineOptions{mg.graph == "on"}),
            std::move(comm), cfg,
            course::DataParallelOptions{mg.allreduce, static_cast<std::size_t>(mg.bucket_kib) * 1024,
                                        /*sum_alone=*/step_name != "fused"});
        std::cout << about << describe_run(me, cfg, *engine, mg);
        if (cudnn != nullptr) {
          const std::string recorded = cudnn->recorded_algorithms_note();
          if (!recorded.empty()) std::cout << "conv algorithms recorded by the checkpoint: " << recorded << "\n";
          if (cfg.verbose) std::cout << cudnn->algorithm_report();
        }
        return engine;
      },
      stage_options);
}
