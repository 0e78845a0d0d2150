/// @file bootstrap.cpp
/// @brief Multi-GPU plumbing (given code, not a lesson): the rank's place from the environment (its launcher's
/// variables, the rendezvous address), and the unique id through a file (see the header).
#include "common/multi_gpu/bootstrap.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

namespace course {

namespace {

// The whole number in variable `name`, or a LaunchError that names it.
int whole_number(const EnvLookup& env, const char* name) {
  const char* text = env(name);
  const std::string value = text != nullptr ? text : "";
  if (value.empty() || value.size() > 9 || value.find_first_not_of("0123456789") != std::string::npos)
    throw LaunchError(std::string(name) + "='" + value + "' is not a whole number");
  return std::stoi(value);
}

bool is_set(const EnvLookup& env, const char* name) { return env(name) != nullptr; }

RankPlace place_from(const EnvLookup& env, const char* rank_var, const char* world_var, const char* local_var,
                     const std::string& started_by) {
  if (!is_set(env, rank_var) || !is_set(env, world_var))
    throw LaunchError(std::string(is_set(env, rank_var) ? world_var : rank_var) + " is not set, but " +
                      (is_set(env, rank_var) ? rank_var : world_var) + " is: a rank needs both");
  RankPlace p;
  p.world = whole_number(env, world_var);
  p.rank = whole_number(env, rank_var);
  p.local_rank = is_set(env, local_var) ? whole_number(env, local_var) : p.rank;
  p.started_by = started_by;
  if (p.world < 1) throw LaunchError(std::string(world_var) + "=" + std::to_string(p.world) + ": a run needs a rank");
  if (p.rank >= p.world)
    throw LaunchError(std::string(rank_var) + "=" + std::to_string(p.rank) + " is not a rank of " + world_var + "=" +
                      std::to_string(p.world) + " (ranks are 0 to " + std::to_string(p.world - 1) + ")");
  return p;
}

std::string header_line(int world) { return "course-nccl-id 1 world " + std::to_string(world) + "\n"; }

int port_number(const EnvLookup& env, const char* name) {
  const int port = whole_number(env, name);
  if (port < 1 || port > 65535)
    throw LaunchError(std::string(name) + "=" + std::to_string(port) + " is not a TCP port (1 to 65535)");
  return port;
}

// Slurm's place: only in a task of a job step (srun sets SLURM_STEP_ID; a batch script has none).
std::optional<RankPlace> slurm_place(const EnvLookup& env) {
  const char* world_var = is_set(env, "SLURM_STEP_NUM_TASKS") ? "SLURM_STEP_NUM_TASKS" : "SLURM_NTASKS";
  RankPlace p = place_from(env, "SLURM_PROCID", world_var, "SLURM_LOCALID", "srun (Slurm)");
  if (p.world == 1) return std::nullopt;
  p.may_bind_gpu = true;
  const std::string job = is_set(env, "SLURM_JOB_ID") ? env("SLURM_JOB_ID") : "";
  p.run_id = job + "." + env("SLURM_STEP_ID");
  if (is_set(env, "MASTER_ADDR")) {
    p.rendezvous.host = env("MASTER_ADDR");
  } else {
    const char* list = is_set(env, "SLURM_STEP_NODELIST") ? env("SLURM_STEP_NODELIST")
                       : is_set(env, "SLURM_JOB_NODELIST") ? env("SLURM_JOB_NODELIST")
                                                           : "";
    p.rendezvous.host = first_slurm_host(list);
  }
  if (is_set(env, "MASTER_PORT")) {
    p.rendezvous.port = port_number(env, "MASTER_PORT");
  } else {
    const std::string digits = job.size() > 3 ? job.substr(job.size() - 3) : job;
    p.rendezvous.port = 29500 + (digits.find_first_not_of("0123456789") == std::string::npos && !digits.empty()
                                     ? std::stoi(digits)
                                     : 0);
  }
  return p;
}

// torchrun's place: RANK, WORLD_SIZE, LOCAL_RANK, with rank 0 at MASTER_ADDR:MASTER_PORT.
std::optional<RankPlace> torchrun_place(const EnvLookup& env) {
  RankPlace p = place_from(env, "RANK", "WORLD_SIZE", "LOCAL_RANK", "torchrun's variables");
  if (p.world == 1) return std::nullopt;
  p.may_bind_gpu = true;
  if (is_set(env, "TORCHELASTIC_RUN_ID")) p.run_id = env("TORCHELASTIC_RUN_ID");
  if (is_set(env, "MASTER_ADDR") != is_set(env, "MASTER_PORT"))
    throw LaunchError(std::string(is_set(env, "MASTER_ADDR") ? "MASTER_PORT" : "MASTER_ADDR") +
                      " is not set, but " + (is_set(env, "MASTER_ADDR") ? "MASTER_ADDR" : "MASTER_PORT") +
                      " is: rank 0's address needs both");
  if (is_set(env, "MASTER_ADDR")) {
    p.rendezvous.host = env("MASTER_ADDR");
    p.rendezvous.port = port_number(env, "MASTER_PORT");
  }
  return p;
}

}  // namespace

std::string first_slurm_host(const std::string& list) {
  // The first item: up to a comma outside brackets.
  std::size_t end = 0;
  for (int depth = 0; end < list.size() && (list[end] != ',' || depth > 0); ++end)
    depth += list[end] == '[' ? 1 : list[end] == ']' ? -1 : 0;
  const std::string item = list.substr(0, end);
  const std::size_t open = item.find('['), close = item.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return item;
  // "prefix[03-04,07]suffix": the first number of the first range, zeros kept.
  const std::string ranges = item.substr(open + 1, close - open - 1);
  return item.substr(0, open) + ranges.substr(0, ranges.find_first_of(",-")) + item.substr(close + 1);
}

int rank_device(const RankPlace& place, int visible_gpus) {
  if (place.may_bind_gpu && visible_gpus == 1) return 0;
  return place.local_rank < visible_gpus ? place.local_rank : -1;
}

std::optional<RankPlace> rank_place_from_env(const EnvLookup& env) {
  std::optional<RankPlace> place;
  if (is_set(env, "COURSE_RANK") || is_set(env, "COURSE_WORLD_SIZE"))
    place = place_from(env, "COURSE_RANK", "COURSE_WORLD_SIZE", "COURSE_LOCAL_RANK", "this trainer's launcher");
  else if (is_set(env, "OMPI_COMM_WORLD_RANK") || is_set(env, "OMPI_COMM_WORLD_SIZE"))
    place = place_from(env, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                       "mpirun (Open MPI)");
  else if (is_set(env, "SLURM_STEP_ID") && is_set(env, "SLURM_PROCID"))
    place = slurm_place(env);
  else if (is_set(env, "RANK") || is_set(env, "WORLD_SIZE"))
    place = torchrun_place(env);
  if (place && env("COURSE_NCCL_ID_FILE") != nullptr) place->id_file = env("COURSE_NCCL_ID_FILE");
  return place;
}

void publish_unique_id(const std::string& path, const std::string& id, int world) {
  if (id.size() != kUniqueIdBytes)
    throw std::invalid_argument("a unique id has " + std::to_string(kUniqueIdBytes) + " bytes, not " +
                                std::to_string(id.size()));
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << header_line(world) << id;
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      throw std::runtime_error("cannot write the NCCL id file '" + tmp + "': " + std::strerror(errno));
    }
  }
  // link() puts the whole file in place at once, and fails if the path exists.
  const int linked = ::link(tmp.c_str(), path.c_str());
  const int error = errno;
  std::remove(tmp.c_str());
  if (linked != 0 && error == EEXIST)
    throw LaunchError("the NCCL id file '" + path + "' exists already: it is left from another run (remove it) or "
                      "another run uses the same path now (give each run its own --nccl-id-file)");
  if (linked != 0) throw std::runtime_error("cannot create the NCCL id file '" + path + "': " + std::strerror(error));
}

std::string wait_for_unique_id(const std::string& path, int world, int rank, double timeout_s) {
  const auto start = std::chrono::steady_clock::now();
  const std::string want = header_line(world);
  for (;;) {
    std::ifstream in(path, std::ios::binary);
    if (in) {  // rank 0 links the file into place whole, so what exists is complete
      const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      const std::size_t newline = bytes.find('\n');
      if (newline == std::string::npos || bytes.size() != newline + 1 + kUniqueIdBytes ||
          bytes.compare(0, 15, "course-nccl-id ") != 0)
        throw std::runtime_error("rank " + std::to_string(rank) + ": '" + path + "' is not an NCCL id file of this "
                                 "trainer (" + std::to_string(bytes.size()) + " bytes)");
      const std::string line = bytes.substr(0, newline + 1);
      if (line != want)
        throw std::runtime_error("rank " + std::to_string(rank) + ": the NCCL id file '" + path + "' begins '" +
                                 line.substr(0, newline) + "', but this run has " + std::to_string(world) +
                                 " ranks: it is left from another run (remove it)");
      return bytes.substr(newline + 1);
    }
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (waited >= timeout_s)
      throw std::runtime_error("rank " + std::to_string(rank) + ": no NCCL id appeared in '" + path + "' within " +
                               std::to_string(static_cast<int>(timeout_s)) + " s: rank 0 did not start or failed "
                               "before writing it, or the path is not on a filesystem every rank sees "
                               "(--nccl-id-file)");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace course
