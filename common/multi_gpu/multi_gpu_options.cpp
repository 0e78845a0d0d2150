/// @file multi_gpu_options.cpp
/// @brief Multi-GPU plumbing (given code, not a lesson): the trainer's own flags and the role of a process (see the header).
#include "common/multi_gpu/multi_gpu_options.hpp"

#include <CLI/CLI.hpp>

#include "common/gpu/cuda_check.hpp"

namespace course {

void add_multi_gpu_options(CLI::App& app, MultiGpuOptions& o, const std::optional<RankPlace>& place) {
  app.add_option("--gpus", o.gpus,
                 "GPUs to train on, one process each (default: 1, or the ranks mpirun started). With N above 1 "
                 "the trainer starts N copies of itself, one per GPU; --batch stays the global batch, each GPU "
                 "taking 1/N of it")
      ->check(CLI::Range(1, 1024))
      ->default_str("1")
      ->type_name("N");
  app.add_flag("--spawn", o.spawn,
               "Start the ranks as child processes even for --gpus 1 (the multi-process path on one GPU)");
  app.add_option("--nccl-id-file", o.nccl_id_file,
                 "Under mpirun, srun or torchrun: a path every rank sees, where rank 0 leaves NCCL's unique id (it "
                 "must not exist); without it, rank 0 hands the id out over TCP at MASTER_ADDR:MASTER_PORT")
      ->type_name("PATH");
  app.add_option("--allreduce", o.allreduce,
                 "How the gradients are summed over the GPUs: one all-reduce after the backward pass (flat), "
                 "buckets of layers all-reduced on a second stream while the backward pass goes on (buckets), or, "
                 "between GPUs of one host with peer access, one kernel that writes into the others' memory (peer); "
                 "auto: peer where it can run, else buckets")
      ->check(CLI::IsMember({"auto", "flat", "buckets", "peer"}))
      ->capture_default_str();
  app.add_option("--bucket-kib", o.bucket_kib, "The smallest bucket, in KiB (--allreduce buckets; 0: one per layer)")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str()
      ->type_name("KIB");
  app.add_option("--nccl-timeout", o.nccl_timeout_s,
                 "Seconds a rank waits for a collective to progress before it stops with an error")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str()
      ->type_name("SECONDS");
  app.add_option("--graph", o.graph,
                 "Replay each full training step, all-reduce included, as one CUDA graph (on) or launch every "
                 "call one by one (off); --profile always runs without it")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app.add_option("--conv-algos", o.conv_algos,
                 "Which conv algorithms cudnnFind may choose (stage 06): deterministic, direct or fastest")
      ->check(CLI::IsMember({"deterministic", "direct", "fastest"}))
      ->capture_default_str();
  // Checked once the whole command line is parsed, so --help works anywhere.
  app.final_callback([&o, place] {
    if (place && o.gpus != 0 && o.gpus != place->world)
      throw CLI::ValidationError("--gpus", std::to_string(o.gpus) + ", but " + place->started_by + " started " +
                                                 std::to_string(place->world) +
                                                 " ranks: leave --gpus out, or make the two agree");
    if (place && place->world > 1 && place->id_file.empty() && o.nccl_id_file.empty() &&
        place->rendezvous.host.empty())
      throw CLI::ValidationError("--nccl-id-file", "needed: " + place->started_by + " started " +
                                                       std::to_string(place->world) + " ranks, and rank 0 leaves NCCL's "
                                                       "unique id for the others in this file, on a filesystem every rank "
                                                       "sees (or set MASTER_ADDR and MASTER_PORT, rank 0's address: it "
                                                       "hands the id out over TCP there)");
    if (place && o.spawn && place->started_by != "this trainer's launcher")
      throw CLI::ValidationError("--spawn", "this process is already a rank (started by " + place->started_by + ")");
    // Before the data is loaded: without a GPU there is nothing to wait for.
    std::string why;
    if (!gpu_available(&why)) throw GpuError("stage 09 trains on CUDA GPUs, and there is none: " + why);
  });
}

ProcessRole process_role(const std::optional<RankPlace>& place, const MultiGpuOptions& o) {
  if (place) return ProcessRole::Rank;
  if (o.gpus > 1 || o.spawn) return ProcessRole::Launcher;
  return ProcessRole::Alone;
}

}  // namespace course
