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
///
/// The id travels through a file that rank 0 writes and the others read: a
/// path the launcher makes in a fresh temporary folder (COURSE_NCCL_ID_FILE),
/// or one given with `--nccl-id-file` on a filesystem that every rank sees
/// (the only choice under mpirun, since this build uses no MPI library: with
/// MPI one would MPI_Bcast the 128 bytes from rank 0 instead). NCCL itself
/// needs nothing more: the id holds rank 0's address, and ranks connect there.
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

/// Where this process stands among the ranks.
struct RankPlace {
  int rank = 0;
  int world = 1;
  int local_rank = 0;    ///< which GPU of its host: device `local_rank` of those CUDA shows it
  std::string started_by;  ///< "this trainer's launcher", "mpirun (Open MPI)", or "" for a process on its own
  std::string id_file;   ///< where rank 0 leaves the NCCL id ("" for a world of one)
};

/// Reads a variable of the environment (std::getenv, or a table in the tests).
using EnvLookup = std::function<const char*(const char*)>;

/// The place the environment gives: the COURSE_* variables, else Open MPI's, else
/// std::nullopt (a process started by a person). COURSE_NCCL_ID_FILE gives the
/// id file. Throws LaunchError naming the variable for a value that is not a
/// whole number, a world below 1, a rank outside [0, world), or a set that is incomplete.
std::optional<RankPlace> rank_place_from_env(const EnvLookup& env);

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
