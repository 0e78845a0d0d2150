// Task 6.1: the stream and the two library handles, bound together.
#include <gtest/gtest.h>

#include "06_cudnn/gpu_handles.hpp"
#include "s06_support.hpp"

using namespace course;

namespace {
// Frees what create_gpu_handles() made, also when an assertion leaves the test early.
struct HandlesGuard {
  GpuHandles h;
  ~HandlesGuard() { destroy_gpu_handles(h); }
};
}  // namespace

// Both libraries must queue on our stream: cuDNN's kernels, cuBLAS's and ours
// then run in one order, and one capture records all of them.
TEST(Task6_1_Handles, BothLibrariesQueueOnTheOwnStream) {
  S06_SKIP_WITHOUT_GPU();
  HandlesGuard g{create_gpu_handles()};
  ASSERT_NE(g.h.stream, nullptr) << "the handles need a stream of their own, not the legacy default stream 0";
  ASSERT_NE(g.h.cudnn, nullptr) << "create_gpu_handles() left the cuDNN handle null: cudnnCreate was not called";
  ASSERT_NE(g.h.cublas, nullptr) << "create_gpu_handles() left the cuBLAS handle null: cublasCreate was not called";
  cudaStream_t s = nullptr;
  CUDNN_CHECK(cudnnGetStream(g.h.cudnn, &s));
  EXPECT_EQ(s, g.h.stream) << "cudnnSetStream was not called with the stream";
  s = nullptr;
  CUBLAS_CHECK(cublasGetStream(g.h.cublas, &s));
  EXPECT_EQ(s, g.h.stream) << "cublasSetStream was not called with the stream";
}

// FP32 GEMMs stay FP32 (no TF32 tensor cores), and cuBLAS has its workspace,
// so that it allocates nothing while a graph is being captured.
TEST(Task6_1_Handles, CublasComputesInFp32WithItsOwnWorkspace) {
  S06_SKIP_WITHOUT_GPU();
  HandlesGuard g{create_gpu_handles()};
  cublasMath_t mode = CUBLAS_TF32_TENSOR_OP_MATH;
  CUBLAS_CHECK(cublasGetMathMode(g.h.cublas, &mode));
  EXPECT_EQ(mode, CUBLAS_DEFAULT_MATH) << "expected CUBLAS_DEFAULT_MATH (plain FP32)";
  ASSERT_NE(g.h.cublas_workspace, nullptr) << "no workspace was allocated for cuBLAS";
  cudaPointerAttributes attr{};
  CUDA_CHECK(cudaPointerGetAttributes(&attr, g.h.cublas_workspace));
  EXPECT_EQ(attr.type, cudaMemoryTypeDevice) << "the cuBLAS workspace must be device memory";
}

// Each call makes its own handles and stream; destroying one set leaves the other working.
TEST(Task6_1_Handles, EachCallMakesItsOwnSet) {
  S06_SKIP_WITHOUT_GPU();
  HandlesGuard a{create_gpu_handles()};
  {
    HandlesGuard b{create_gpu_handles()};
    EXPECT_NE(a.h.stream, b.h.stream) << "two calls of create_gpu_handles() returned the same stream";
    EXPECT_NE(a.h.cudnn, b.h.cudnn) << "two calls of create_gpu_handles() returned the same cuDNN handle";
  }
  cudaStream_t s = nullptr;
  CUDNN_CHECK(cudnnGetStream(a.h.cudnn, &s));
  EXPECT_EQ(s, a.h.stream) << "after the second set was destroyed, the first cuDNN handle's stream (left) changed";
  CUDA_CHECK(cudaStreamSynchronize(a.h.stream));
}
