/// @file communicator.hpp
/// @brief Stage 09: one rank's NCCL communicator, its versions, and NVLink multicast kept off (glue, not a task).
///
/// An NCCL communicator is the group of ranks that take part in collectives
/// together, one rank per GPU. It is formed once: rank 0 asks NCCL for a
/// *unique id* (ncclGetUniqueId: 128 bytes that hold the address where rank 0
/// listens), every rank gets those bytes by some means of its own (here: a
/// file, common/multi_gpu/bootstrap.hpp), and every rank calls ncclCommInitRank(&comm, world,
/// id, rank) on its own GPU. The call returns once all `world` ranks have met
/// through rank 0's address and agreed on how to reach each other (NVLink,
/// PCIe, shared memory, the network). From then on a collective on `comm`
/// involves every rank.
///
/// **NVLink multicast stays off.** On NVSwitch systems NCCL can reduce inside
/// the switch (NVLS, "NVLink SHARP"), through multicast memory objects
/// (cuMulticastCreate). On the shared machines this course was written on, a
/// program that uses NVLink multicast can put the host's GPUs out of service
/// for everyone, for a day or more. So every process of this stage sets
/// NCCL_NVLS_ENABLE=0 (unless the user set it: then the choice is theirs) before
/// its first NCCL call, the launcher passes it to every rank, and nothing here
/// calls cuMulticastCreate. NVLS speeds up large all-reduces on NVSwitch
/// machines; the gradients of this course are far too small for it to matter.
#pragma once

#include <nccl.h>

#include <memory>
#include <string>

#include "common/multi_gpu/bootstrap.hpp"
#include "common/multi_gpu/watchdog.hpp"

namespace course {

/// Sets NCCL_NVLS_ENABLE=0 in this process's environment unless it is set
/// already. Returns the value in force afterwards.
std::string keep_nvlink_multicast_off();

/// The NCCL this program was compiled against (the header) and the one it runs with (the library).
struct NcclVersions {
  int header = NCCL_VERSION_CODE;
  int library = 0;
  /// "NCCL 2.28.9 (header 2.28.9)".
  std::string describe() const;
};

/// Both versions. Throws NcclError when the library is older than 2.14 (the
/// oldest that has every call the course makes); prints a warning to stderr
/// when it is older than the header (it still works: the course uses no call
/// newer than 2.14).
NcclVersions check_nccl_versions();

/// A fresh unique id (rank 0 only): 128 bytes that hold the address where this process listens.
ncclUniqueId new_unique_id();

/// The run's unique id on every rank: a fresh one for a world of one; else
/// rank 0 makes one and publishes it in `id_file`, and the other ranks wait for
/// it there (common/multi_gpu/bootstrap.hpp); or, with no file and a rendezvous
/// address in `place`, rank 0 hands it to each rank over TCP (rendezvous.hpp).
/// `timeout_s` at most.
ncclUniqueId share_unique_id(const RankPlace& place, const std::string& id_file, double timeout_s);

/// One rank's membership of a communicator, watched by a Watchdog. Made on the rank's GPU.
class Communicator {
 public:
  /// Joins the communicator of `world` ranks that `id` names, as `rank`.
  /// Blocks until every rank has joined; the watchdog ends the process when that
  /// takes longer than `timeout_s`. Throws NcclError when NCCL refuses.
  Communicator(const ncclUniqueId& id, int rank, int world, double timeout_s);
  /// Finalizes and destroys the communicator. Leaving because of an exception,
  /// it aborts it instead: the other ranks may be in a collective this rank
  /// will never join.
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  ncclComm_t get() const { return comm_; }
  int rank() const { return rank_; }
  int world() const { return world_; }
  Watchdog& watchdog() { return *watchdog_; }
  /// "rank 1 of 2".
  std::string who() const;

 private:
  int rank_, world_;
  std::unique_ptr<Watchdog> watchdog_;
  ncclComm_t comm_ = nullptr;
};

}  // namespace course
