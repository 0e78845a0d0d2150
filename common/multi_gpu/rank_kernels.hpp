/// @file rank_kernels.hpp
/// @brief Multi-GPU plumbing (given code, not a lesson): the two one-thread kernels of a rank's step.
///
/// Both exist so that a step needs nothing from the host while it runs, even
/// replayed from a CUDA graph: a value the step reads is written by a kernel
/// queued before it, and what the host wants to know of the step's progress is
/// written by a kernel into host memory the host reads without waiting.
#pragma once

#include <cuda_runtime.h>

namespace course {

/// *where = value, queued on `stream` (the value travels as a kernel argument,
/// so the host may change its own copy at once).
void store_on_device(float* where, float value, cudaStream_t stream);

/// ++*count on the device and the new count copied to *host_mirror (host memory
/// mapped into the device's address space, cudaHostAllocMapped), queued on `stream`.
void count_on_device(unsigned long long* count, unsigned long long* host_mirror, cudaStream_t stream);

}  // namespace course
