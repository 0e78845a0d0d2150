/// @file communicator.cpp
/// @brief Stage 09: forming, watching and ending a rank's communicator (glue, not a task; see the header).
#include "09_multi_gpu/communicator.hpp"

#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>

#include "common/multi_gpu/nccl_check.hpp"
#include "common/multi_gpu/rendezvous.hpp"

namespace course {

std::string keep_nvlink_multicast_off() {
  setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0);
  const char* value = std::getenv("NCCL_NVLS_ENABLE");
  return value != nullptr ? value : "";
}

std::string NcclVersions::describe() const {
  return "NCCL " + nccl_version_string(library) + " (header " + nccl_version_string(header) + ")";
}

NcclVersions check_nccl_versions() {
  NcclVersions v;
  NCCL_CHECK(ncclGetVersion(&v.library));
  if (v.library < NCCL_VERSION(2, 14, 0))
    throw NcclError("the NCCL library is " + nccl_version_string(v.library) +
                    ", older than 2.14, the oldest with every call this stage makes (compiled against " +
                    nccl_version_string(v.header) + "); point COURSE_NCCL_ROOT or LD_LIBRARY_PATH at a newer one");
  if (v.library / 100 < v.header / 100)
    std::cerr << "warning: running NCCL " << nccl_version_string(v.library) << ", compiled against the header of "
              << nccl_version_string(v.header) << "; this stage calls nothing newer than 2.14, so it works, "
              << "but the two should match\n";
  return v;
}

ncclUniqueId new_unique_id() {
  keep_nvlink_multicast_off();
  ncclUniqueId id;
  NCCL_CHECK(ncclGetUniqueId(&id));
  return id;
}

ncclUniqueId share_unique_id(const RankPlace& place, const std::string& id_file, double timeout_s) {
  static_assert(sizeof(ncclUniqueId) == kUniqueIdBytes, "NCCL's unique id is not 128 bytes here");
  if (place.world == 1) return new_unique_id();
  ncclUniqueId id;
  if (id_file.empty() && !place.rendezvous.host.empty()) {  // over TCP: rank 0 listens, the others ask
    if (place.rank == 0) {
      id = new_unique_id();
      UniqueIdServer server(place.rendezvous.port);
      server.serve(std::string(id.internal, kUniqueIdBytes), place.world, place.run_id, timeout_s);
    } else {
      const std::string bytes = fetch_unique_id(place.rendezvous, place.world, place.rank, place.run_id, timeout_s);
      std::memcpy(id.internal, bytes.data(), kUniqueIdBytes);
    }
    return id;
  }
  if (id_file.empty())
    throw LaunchError("rank " + std::to_string(place.rank) + " of " + std::to_string(place.world) +
                      " has no way to share NCCL's unique id: no file (--nccl-id-file) and no rendezvous address "
                      "(MASTER_ADDR, MASTER_PORT)");
  if (place.rank == 0) {
    id = new_unique_id();
    publish_unique_id(id_file, std::string(id.internal, kUniqueIdBytes), place.world);
  } else {
    const std::string bytes = wait_for_unique_id(id_file, place.world, place.rank, timeout_s);
    std::memcpy(id.internal, bytes.data(), kUniqueIdBytes);
  }
  return id;
}

Communicator::Communicator(const ncclUniqueId& id, int rank, int world, double timeout_s)
    : rank_(rank), world_(world) {
  keep_nvlink_multicast_off();
  watchdog_ = std::make_unique<Watchdog>(who(), timeout_s);
  watchdog_->begin_host_wait("forming the communicator of " + std::to_string(world) +
                             " ranks (ncclCommInitRank): a rank did not join, or cannot reach rank 0");
  NCCL_CHECK(ncclCommInitRank(&comm_, world, id, rank));
  watchdog_->end_host_wait();
  watchdog_->watch(comm_);
}

Communicator::~Communicator() {
  if (comm_ == nullptr) return;
  watchdog_->forget_comm();
  if (std::uncaught_exceptions() > 0) {
    ncclCommAbort(comm_);  // errors here change nothing: the process is already on its way out
    return;
  }
  // Finalize waits for this rank's part of every collective issued, which may
  // need the peers: the watchdog ends the process if a peer never comes.
  watchdog_->begin_host_wait("finishing the communicator (ncclCommFinalize)");
  if (ncclCommFinalize(comm_) == ncclSuccess)
    ncclCommDestroy(comm_);
  else
    ncclCommAbort(comm_);
  watchdog_->end_host_wait();
}

std::string Communicator::who() const { return "rank " + std::to_string(rank_) + " of " + std::to_string(world_); }

}  // namespace course
