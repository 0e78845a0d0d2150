/// @file bootstrap.hpp
/// @brief Multi-GPU plumbing (given code, not a lesson): how a process learns that it is a rank, and how the ranks share NCCL's unique id.
///
/// Before NCCL can connect the GPUs, every process must know three numbers and
/// hold one secret: its rank, the world size, its local rank (which GPU of its
/// host it drives), and rank 0's unique id. Whoever starts the processes sets
/// the numbers in their environments:
///
/// | started by                                   | rank, world size, local rank                                   |
/// |----------------------------------------------|----------------------------------------------------------------|
/// | this trainer, `--gpus N` (launcher.hpp)      | COURSE_RANK, COURSE_WORLD_SIZE, COURSE_LOCAL_RANK             |
/// | Open MPI's `mpirun -np N`                    | OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK |
/// | Slurm's `srun` (a task of a job step)        | SLURM_PROCID, SLURM_STEP_NUM_TASKS (or SLURM_NTASKS), SLURM_LOCALID |
/// | torchrun, or anything that sets its variables | RANK, WORLD_SIZE, LOCAL_RANK                                  |
///
/// The first that is set wins, in that order. Slurm's variables count only in a task
/// that srun started (SLURM_STEP_ID set): a batch script itself sees SLURM_PROCID=0
/// and the job's task count, but it is one process. A Slurm or torchrun world of one
/// is a process on its own (it may start its ranks with `--gpus`).
///
/// The id travels one of two ways. Through a file that rank 0 writes and the others
/// read: a path the launcher makes in a fresh temporary folder (COURSE_NCCL_ID_FILE),
/// or one given with `--nccl-id-file` on a filesystem that every rank sees. Or over
/// TCP from rank 0 (rendezvous.hpp), where no file is given and the place names
/// rank 0's address: torchrun's MASTER_ADDR and MASTER_PORT; under Slurm the same
/// variables when the job sets them, else the first host of the step
/// (SLURM_STEP_NODELIST) at port 29500 + the job id's last three digits. (This build
/// uses no MPI library: with MPI one would MPI_Bcast the 128 bytes from rank 0.)
/// NCCL itself needs nothing more: the id holds rank 0's address, and ranks connect there.
///
/// The file: a first line "course-nccl-id 1 world <N>", then the 128 bytes.
/// Rank 0 writes it under another name and links it into place in one step,
/// refusing a path that exists (a file left by another run would send the
/// other ranks to a process that is gone). The others wait for it, check the
/// world size it names, and read the id. Rank 0 removes it once every rank has
/// joined (ncclCommInitRank returned, which needs every rank to have read it).
#pragma once

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

namespace course {

/// A mistake in how the ranks were started (the environment, --gpus, --nccl-id-file): the trainer exits with 2.
class LaunchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Where rank 0 hands NCCL's id out over TCP (rendezvous.hpp): a host name or address and a port.
struct RendezvousAddress {
  std::string host;
  int port = 0;
  std::string str() const { return host + ":" + std::to_string(port); }
};

/// Where this process stands among the ranks.
struct RankPlace {
  int rank = 0;
  int world = 1;
  int local_rank = 0;    ///< which GPU of its host: device `local_rank` of those CUDA shows it
  std::string started_by;  ///< "this trainer's launcher", "mpirun (Open MPI)", "srun (Slurm)", "torchrun's
                           ///< variables", or "" for a process on its own
  std::string id_file;     ///< where rank 0 leaves the NCCL id ("" for a world of one, or over TCP)
  RendezvousAddress rendezvous;  ///< where rank 0 hands the id out over TCP (host "" when it does not)
  std::string run_id;      ///< what tells this run's ranks from another run's there (Slurm's job.step,
                           ///< TORCHELASTIC_RUN_ID; "" when the launcher gives none)
  bool may_bind_gpu = false;  ///< the launcher may give each task a GPU of its own (Slurm's
                              ///< --gpus-per-task=1, torchrun under a scheduler): see rank_device
};

/// The CUDA device a rank uses when CUDA shows it `visible_gpus` GPUs: its local rank, or device 0
/// when a launcher that binds GPUs to tasks left it exactly one; -1 when its local rank has no GPU.
int rank_device(const RankPlace& place, int visible_gpus);

/// Reads a variable of the environment (std::getenv, or a table in the tests).
using EnvLookup = std::function<const char*(const char*)>;

/// The place the environment gives: the COURSE_* variables, else Open MPI's, else Slurm's, else
/// torchrun's (the table above), else std::nullopt (a process started by a person).
/// COURSE_NCCL_ID_FILE gives the id file, MASTER_ADDR and MASTER_PORT the rendezvous. Throws
/// LaunchError naming the variable for a value that is not a whole number, a world below 1, a rank
/// outside [0, world), a port outside 1 to 65535, or a set that is incomplete.
std::optional<RankPlace> rank_place_from_env(const EnvLookup& env);

/// The first host of a Slurm host list: "gpu[03-04,07],cpu1" -> "gpu03", "a1,a2" -> "a1".
std::string first_slurm_host(const std::string& list);

/// Bytes of a unique id (NCCL_UNIQUE_ID_BYTES); checked where ids are read and written.
constexpr std::size_t kUniqueIdBytes = 128;

/// Rank 0: writes `id` (kUniqueIdBytes) for a world of `world` ranks to `path`.
/// Throws LaunchError when `path` exists, std::runtime_error (naming the path
/// and the reason) when it cannot be written.
void publish_unique_id(const std::string& path, const std::string& id, int world);

/// Ranks > 0: waits for `path` to hold an id for `world` ranks and returns it.
/// Throws std::runtime_error naming the path after `timeout_s` seconds without
/// one, or at once when the file names another world size.
std::string wait_for_unique_id(const std::string& path, int world, int rank, double timeout_s);

}  // namespace course
