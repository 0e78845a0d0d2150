/// @file rendezvous.hpp
/// @brief Multi-GPU plumbing (given code, not a lesson): NCCL's unique id handed from rank 0 to the
/// other ranks over TCP, for clusters without a filesystem every host sees.
///
/// Rank 0 listens at the rendezvous address (torchrun's MASTER_ADDR:MASTER_PORT; under Slurm the
/// first host of the step, bootstrap.hpp); every other rank connects, says who it is, and gets the id:
///
///     rank r > 0 -> rank 0:  "course-nccl-id 1 world <N> rank <r> run <run id>\n"
///     rank 0 -> rank r:      "ok\n" and the 128 bytes, or "refused: <why>\n"
///
/// Rank 0 refuses a rank of another world size or of another run (the run id: Slurm's job and step,
/// torchrun's TORCHELASTIC_RUN_ID), and a rank number it has already served, then goes on waiting
/// for the right ones. It is done when every rank 1 .. N-1 has its id; NCCL needs nothing more (the id
/// holds rank 0's own address for ncclCommInitRank). Both sides give up after a timeout, with an
/// error that names the address.
#pragma once

#include <string>

#include "common/multi_gpu/bootstrap.hpp"

namespace course {

/// Rank 0's side: a socket listening on every interface at `port` (0: a free port the system picks,
/// for the tests). Throws LaunchError naming the port when it cannot listen (taken, not allowed).
class UniqueIdServer {
 public:
  explicit UniqueIdServer(int port);
  ~UniqueIdServer();
  UniqueIdServer(const UniqueIdServer&) = delete;
  UniqueIdServer& operator=(const UniqueIdServer&) = delete;

  /// The port it listens on.
  int port() const { return port_; }

  /// Hands `id` (kUniqueIdBytes) to each of ranks 1 .. world-1 of run `run_id` as they connect, refusing
  /// any other; returns once all have it. Throws std::runtime_error naming the ranks still missing after
  /// `timeout_s` seconds.
  void serve(const std::string& id, int world, const std::string& run_id, double timeout_s);

 private:
  int fd_ = -1;
  int port_ = 0;
};

/// A rank > 0's side: connects to rank 0 at `at` (trying again while nothing listens there yet), says it is
/// rank `rank` of `world` in run `run_id`, and returns the id. Throws LaunchError with rank 0's reason when
/// it refuses, std::runtime_error naming the address when nothing answers there within `timeout_s` seconds.
std::string fetch_unique_id(const RendezvousAddress& at, int world, int rank, const std::string& run_id,
                            double timeout_s);

}  // namespace course
