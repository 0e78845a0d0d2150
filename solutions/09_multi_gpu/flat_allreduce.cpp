/// @file flat_allreduce.cpp
/// @brief Stage 09 (Task 9.2): the weighted sum over the ranks, and the flat schedule.
#include "09_multi_gpu/flat_allreduce.hpp"

#include "common/multi_gpu/nccl_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

ncclRedOp_t create_weighted_sum(ncclComm_t comm, float* weight) {
  ncclRedOp_t op{};
  // BEGIN Task 9.2: make op the reduction that multiplies each rank's float input by the float at `weight` (device memory, read when the collective runs) and sums over the ranks
  // HINT: ncclRedOpCreatePreMulSum(&op, scalar, datatype, residence, comm), checked with NCCL_CHECK; the residence is ncclScalarDevice.
  NCCL_CHECK(ncclRedOpCreatePreMulSum(&op, weight, ncclFloat, ncclScalarDevice, comm));
  // END Task 9.2
  return op;
}

void allreduce_weighted(float* values, std::size_t count, ncclRedOp_t weighted_sum, ncclComm_t comm,
                        cudaStream_t stream) {
  // BEGIN Task 9.2: queue on `stream` the all-reduce of values[0, count) with `weighted_sum`, in place
  // HINT: ncclAllReduce(sendbuff, recvbuff, count, ncclFloat, op, comm, stream); the same pointer twice is "in place".
  NCCL_CHECK(ncclAllReduce(values, values, count, ncclFloat, weighted_sum, comm, stream));
  // END Task 9.2
}

FlatAllReduce::FlatAllReduce(ncclComm_t comm, ncclRedOp_t weighted_sum, float* gradients, std::size_t count,
                             AllReduceTiming& timing)
    : comm_(comm), weighted_sum_(weighted_sum), gradients_(gradients), count_(count), timing_(timing) {
  row_ = timing_.add_row("all-reduce, flat (" + std::to_string((count * sizeof(float) + 1023) / 1024) + " KiB)");
}

void FlatAllReduce::before_update(cudaStream_t stream) {
  timing_.time(row_, stream, [&] { allreduce_weighted(gradients_, count_, weighted_sum_, comm_, stream); });
}

}  // namespace course
