/// @file rank_kernels.cu
/// @brief Multi-GPU plumbing (given code, not a lesson): the one-thread kernels of a rank's step (see the header).
#include "common/multi_gpu/rank_kernels.hpp"

#include "common/gpu/cuda_check.hpp"

namespace course {

namespace {

__global__ void store_kernel(float* where, float value) { *where = value; }

__global__ void count_kernel(unsigned long long* count, volatile unsigned long long* host_mirror) {
  const unsigned long long next = *count + 1;
  *count = next;
  *host_mirror = next;
  __threadfence_system();  // the host sees the count no later than anything the next kernels write for it
}

}  // namespace

void store_on_device(float* where, float value, cudaStream_t stream) {
  store_kernel<<<1, 1, 0, stream>>>(where, value);
  CUDA_CHECK_LAUNCH();
}

void count_on_device(unsigned long long* count, unsigned long long* host_mirror, cudaStream_t stream) {
  count_kernel<<<1, 1, 0, stream>>>(count, host_mirror);
  CUDA_CHECK_LAUNCH();
}

}  // namespace course
