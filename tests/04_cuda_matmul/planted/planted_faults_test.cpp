// Faults planted in kernels of Tasks 4.1 to 4.3, each in a test named as that
// task's tests are, so that tests/support/gpu_fault_report.cpp names the task.
// These tests fail on purpose: bin/s04_planted_faults is run by the tests of
// Stage04_FaultMessages (../fault_messages_test.cpp), which check what a
// learner would read, and never by ctest itself. Test-only code.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpu_testkit.hpp"
#include "planted_kernels.hpp"

using namespace course;
using namespace course::gputest;

namespace {

// Whether a GPU was there when the binary started: after the fault planted
// below, even cudaGetDeviceCount may fail, and the test after it must still run.
bool had_a_gpu(std::string* why) {
  static std::string reason;
  static const bool present = gpu_available(&reason);
  *why = reason;
  return present;
}

}  // namespace

#define SKIP_WITHOUT_A_GPU_AT_START()               \
  do {                                              \
    std::string why_;                               \
    if (!had_a_gpu(&why_)) GTEST_SKIP() << why_;    \
  } while (0)

// The launch is refused: the GPU stays usable.
TEST(Task4_1_PlantedLaunchError, ABlockOfTooManyThreads) {
  SKIP_WITHOUT_A_GPU_AT_START();
  DeviceBuffer<float> x(2048);
  planted::launch_a_block_too_large_gpu(x.get());
}

// Task 4.2's grid without its bounds check, C placed against unmapped memory:
// the writes past C fault, and the copy back reports it.
TEST(Task4_2_PlantedOutOfBounds, WritesPastTheEndOfC) {
  SKIP_WITHOUT_A_GPU_AT_START();
  const int M = 100, N = 100, K = 100;  // 4 x 13 blocks of 32 x 8: 28 rows and 4 columns of threads outside C
  const std::vector<float> a = random_floats(M * K, 1), b = random_floats(K * N, 2);
  DeviceBuffer<float> A = to_device(a), B = to_device(b);
  planted::GuardedBuffer C(static_cast<std::size_t>(M) * N);
  planted::matmul_grid_without_bounds_check_gpu(A.get(), B.get(), C.get(), M, N, K);
  std::vector<float> got(static_cast<std::size_t>(M) * N);
  CUDA_CHECK(cudaMemcpy(got.data(), C.get(), got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  std::vector<float> want(got.size(), 0.f);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      for (int k = 0; k < K; ++k) want[i * N + j] += a[i * K + k] * b[k * N + j];
  EXPECT_TRUE(close_enough("C", got, want, {M, N}, sum_atol(K), kSumRtol, kSumRelNorm));
}

// After the fault above, the context is lost: any GPU call fails.
TEST(Task4_2_PlantedOutOfBounds, ALaterTestFindsTheContextLost) {
  SKIP_WITHOUT_A_GPU_AT_START();
  const DeviceBuffer<float> x = to_device(std::vector<float>(16, 1.f));
  EXPECT_EQ(to_host(x), std::vector<float>(16, 1.f));
}

// A kernel that never returns: the wait below never ends, and the time limit
// (COURSE_GPU_TEST_TIMEOUT) stops the process with the message of a hang.
TEST(Task4_3_PlantedHang, AKernelThatNeverReturns) {
  SKIP_WITHOUT_A_GPU_AT_START();
  DeviceBuffer<int> flag(1);
  CUDA_CHECK(cudaMemset(flag.get(), 0, sizeof(int)));
  planted::spin_forever_gpu(flag.get());
  CUDA_CHECK(cudaDeviceSynchronize());
}
