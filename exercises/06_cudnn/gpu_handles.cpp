/// @file gpu_handles.cpp
/// @brief Stage 06 (Task 6.1): creating the handles and binding them to our stream.
#include "06_cudnn/gpu_handles.hpp"

#include "common/gpu/cuda_check.hpp"
#include "common/gpu/cudnn_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

GpuHandles create_gpu_handles() {
  GpuHandles h;
  try {
    // TODO(Task 6.1): create a stream, a cuDNN handle and a cuBLAS handle; bind both handles to the stream; cuBLAS in plain FP32 math with a workspace of kCublasWorkspaceBytes
    // HINT: cudaStreamCreate, cudnnCreate + cudnnSetStream, cublasCreate + cublasSetStream + cublasSetMathMode(CUBLAS_DEFAULT_MATH).
    // HINT: cudaMalloc the workspace into h.cublas_workspace, then cublasSetWorkspace; check every call (CUDA_CHECK, CUDNN_CHECK, CUBLAS_CHECK).
    throw course::NotImplemented("Task 6.1", "06_cudnn/gpu_handles.cpp", "docs/lessons/06_cudnn.md");
  } catch (...) {
    destroy_gpu_handles(h);  // what was made before the failing call
    throw;
  }
  return h;
}

void destroy_gpu_handles(GpuHandles& h) noexcept {
  // Errors are ignored here: this runs on the way out, also after a failure.
  if (h.cublas) cublasDestroy(h.cublas);
  if (h.cudnn) cudnnDestroy(h.cudnn);
  if (h.cublas_workspace) cudaFree(h.cublas_workspace);
  if (h.stream) cudaStreamDestroy(h.stream);
  h = GpuHandles{};
}

}  // namespace course
