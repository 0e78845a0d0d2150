/// @file multi_gpu_options.hpp
/// @brief Multi-GPU plumbing (given code, not a lesson): the trainer's own flags, and what a process does with them: launch the ranks or be one.
///
/// One trainer binary, three ways to run:
///
/// | command                                            | this process                                       |
/// |----------------------------------------------------|----------------------------------------------------|
/// | `s09_train_solution ...` (or `--gpus 1`)            | trains alone: rank 0 of 1, on GPU 0, no launcher   |
/// | `s09_train_solution --gpus N ...` (N > 1, or `--spawn`) | the launcher: starts N ranks of itself, waits  |
/// | a rank (COURSE_RANK or Open MPI's variables set)   | trains as that rank, on GPU `local rank`           |
///
/// In every case `--batch` is the *global* batch, the one the learning rate
/// was chosen for: N GPUs split each batch of `--batch` examples among them, so
/// `--gpus 2 --batch 128` computes what `--gpus 1 --batch 128` computes.
#pragma once

#include <optional>
#include <string>

#include "common/multi_gpu/bootstrap.hpp"

namespace CLI {
class App;
}

namespace course {

/// The flags of stage 09, besides every trainer's.
struct MultiGpuOptions {
  int gpus = 0;                        ///< --gpus N: ranks, one per GPU (0: not given; one, or mpirun's)
  bool spawn = false;                  ///< --spawn: start the ranks as processes even for --gpus 1
  std::string nccl_id_file;            ///< --nccl-id-file PATH: where rank 0 leaves NCCL's unique id (mpirun)
  std::string allreduce = "auto";      ///< --allreduce auto|flat|buckets|peer
  int bucket_kib = 128;                ///< --bucket-kib: the smallest bucket, in KiB
  double nccl_timeout_s = 120;         ///< --nccl-timeout: seconds without progress before a rank gives up
  std::string graph = "on";            ///< --graph on|off (stage 06's)
  std::string conv_algos = "deterministic";  ///< --conv-algos (stage 06's)
};

/// Adds stage 09's flags to `app`, bound to `o`, with their checks. `place`
/// is this process's place when it is a rank (it decides what --gpus may say).
/// Once the command line is parsed, it also checks that CUDA shows a GPU
/// (course::GpuError when not), so --help works on any machine.
void add_multi_gpu_options(CLI::App& app, MultiGpuOptions& o, const std::optional<RankPlace>& place);

/// What this process does.
enum class ProcessRole {
  Alone,     ///< trains by itself: rank 0 of 1
  Launcher,  ///< starts the ranks and waits for them
  Rank,      ///< a rank started by the launcher or by mpirun
};

/// The role of a process with environment place `place` (rank_place_from_env)
/// and parsed flags `o`: a rank when `place` is set; else the launcher for
/// --gpus above 1 or --spawn; else alone.
ProcessRole process_role(const std::optional<RankPlace>& place, const MultiGpuOptions& o);

}  // namespace course
