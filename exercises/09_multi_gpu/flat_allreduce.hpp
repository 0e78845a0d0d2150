/// @file flat_allreduce.hpp
/// @brief Stage 09 (Task 9.2): every rank's weighted gradients summed with one ncclAllReduce after the backward pass.
///
/// An *all-reduce* takes one buffer of equal length from every rank, combines
/// them element by element, and leaves the result in every rank's buffer. With
/// the gradients, combining must give the one-GPU gradient of the global
/// batch: sum_r w_r g_r, with w_r this rank's share of the step's examples
/// (shard_plan.hpp). NCCL has that operation built in, a *pre-multiplied sum*:
///
///     ncclRedOpCreatePreMulSum(&op, w, ncclFloat, ncclScalarDevice, comm)
///
/// makes a reduction `op` that multiplies each rank's input by that rank's own
/// scalar, then sums over the ranks. `ncclScalarDevice` says the scalar lives
/// in device memory and is read when the collective runs: the data-parallel
/// engine writes a new weight before a step whose weight changes (the short
/// last step), and a step replayed from a CUDA graph reads the new value. The
/// op is made once per communicator and released with ncclRedOpDestroy.
///
/// With one rank and weight 1 the sum is the gradient itself, bit for bit: x *
/// 1.0f is x. With N ranks of equal shares, the weights are 1/N (ncclAvg
/// computes the same thing; the pre-multiplied sum also covers unequal shares).
///
/// course::FlatAllReduce is the first, simplest schedule: after the whole
/// backward pass, one all-reduce of the whole flat gradient, on the compute
/// stream. The update waits for it; nothing overlaps it.
#pragma once

#include <nccl.h>

#include <cstddef>

#include "common/gpu/engine_parts.hpp"
#include "09_multi_gpu/allreduce_timing.hpp"

namespace course {

/// The weighted sum over the ranks of `comm`: each rank's values times the
/// float at `weight` (device memory, read when each collective runs), summed.
/// Release it with ncclRedOpDestroy(op, comm) before the communicator goes.
ncclRedOp_t create_weighted_sum(ncclComm_t comm, float* weight);

/// values[0, count) = the weighted sum over the ranks of every rank's values[0, count), in place, queued on `stream`.
void allreduce_weighted(float* values, std::size_t count, ncclRedOp_t weighted_sum, ncclComm_t comm,
                        cudaStream_t stream);

/// One all-reduce of all the gradients once the backward pass is queued (a GradientSync for the engine).
class FlatAllReduce : public GradientSync {
 public:
  /// `gradients`: the engine's flat buffer of `count` floats. `timing` adds one --profile row.
  FlatAllReduce(ncclComm_t comm, ncclRedOp_t weighted_sum, float* gradients, std::size_t count,
                AllReduceTiming& timing);
  /// Nothing yet: the flat schedule waits for the whole backward pass.
  void gradients_queued(const GradientRange&, cudaStream_t) override {}
  bool uses_each_layer() const override { return false; }
  /// The all-reduce of every gradient, on `stream` itself: the update after it on `stream` waits for it.
  void before_update(cudaStream_t stream) override;

 private:
  ncclComm_t comm_;
  ncclRedOp_t weighted_sum_;
  float* gradients_;
  std::size_t count_;
  AllReduceTiming& timing_;
  std::size_t row_ = 0;
};

}  // namespace course
