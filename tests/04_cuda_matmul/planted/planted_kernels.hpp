// Kernels with planted bugs, for the tests that check that a fault in a
// learner's kernel ends in one clear message (tests/support/gpu_fault_report.cpp),
// not a bare CUDA error. Test-only: built into bin/s04_planted_faults alone,
// never part of solutions/ or exercises/.
#pragma once

#include <cstddef>

namespace course::planted {

/// n floats of device memory that end exactly where mapped memory ends: the
/// next address is reserved for this process but backed by nothing, so a write
/// one element past the end faults (cudaErrorIllegalAddress) at once, with or
/// without compute-sanitizer. An ordinary cudaMalloc buffer gives no such
/// promise: a small overrun usually lands in memory that is mapped, and
/// corrupts it silently. Made with the driver's virtual memory calls
/// (cuMemAddressReserve, cuMemCreate, cuMemMap), reached through
/// cudaGetDriverEntryPointByVersion. Throws course::GpuError when they fail.
class GuardedBuffer {
 public:
  explicit GuardedBuffer(std::size_t n);
  ~GuardedBuffer();
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;
  float* get() const { return data_; }

 private:
  unsigned long long base_ = 0, handle_ = 0;
  std::size_t granule_ = 0;
  bool mapped_ = false;
  float* data_ = nullptr;
};

/// Task 4.2's grid, blocks of 32 x 8 threads, thread (m, n) computing C[m][n] of
/// C [M, N] = A [M, K] B [K, N], with the bounds check left out: the threads of the
/// last blocks that fall outside C read past A and write past C. Checks the
/// launch (course::GpuError).
void matmul_grid_without_bounds_check_gpu(const float* A, const float* B, float* C, int M, int N, int K);

/// A kernel that waits for *flag to become nonzero, which nothing ever makes it:
/// it never returns. Checks the launch.
void spin_forever_gpu(const int* flag);

/// Launches a kernel with a block of 2048 threads, twice the most a block may
/// have: the launch is refused (cudaErrorInvalidConfiguration), and
/// CUDA_CHECK_LAUNCH throws course::GpuError.
void launch_a_block_too_large_gpu(float* x);

}  // namespace course::planted
