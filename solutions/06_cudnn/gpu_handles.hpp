/// @file gpu_handles.hpp
/// @brief Stage 06 (Task 6.1): the cuDNN and cuBLAS handles, both bound to one CUDA stream of our own.
///
/// A library handle is the library's context on one GPU: cuDNN's
/// (cudnnHandle_t) and cuBLAS's (cublasHandle_t) hold the kernels they
/// loaded, their settings and the stream they queue work on. Creating one
/// costs milliseconds, so a program makes one of each and passes it to every
/// call: cudnnConvolutionForward(handle, ...), cublasSgemm(handle, ...).
///
/// Every call only *queues* kernels on the handle's stream and returns. With
/// both handles and our own kernels on one stream, the whole training step is
/// one ordered queue: no call waits for another, the host never waits for the
/// GPU within a step, and the step can be recorded as one CUDA graph (the engine's,
/// common/gpu/step_capture.hpp).
///
/// Some cuBLAS kernels need scratch memory. cuBLAS allocates it itself unless
/// it is given a buffer with cublasSetWorkspace; inside a graph capture no
/// memory may be allocated, so we give it one: kCublasWorkspaceBytes, the size
/// cuBLAS's documentation recommends for Hopper GPUs (4 MiB suffices before).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstddef>

namespace course {

/// Scratch memory handed to cuBLAS (32 MiB).
constexpr std::size_t kCublasWorkspaceBytes = std::size_t(32) << 20;

/// The stream and the two library handles every stage 06 call takes.
struct GpuHandles {
  cudaStream_t stream = nullptr;     ///< our own stream (not the legacy default stream 0)
  cudnnHandle_t cudnn = nullptr;     ///< queues its work on `stream`
  cublasHandle_t cublas = nullptr;   ///< queues its work on `stream`, FP32 math, our workspace
  void* cublas_workspace = nullptr;  ///< kCublasWorkspaceBytes of device memory for cuBLAS
};

/// Creates a stream, a cuDNN handle and a cuBLAS handle, binds both handles to
/// the stream, keeps cuBLAS to plain FP32 arithmetic (no TF32 tensor cores, so
/// it computes what stages 01 to 05 compute), and gives cuBLAS its workspace.
/// Throws course::GpuError naming the call that failed; nothing leaks then.
GpuHandles create_gpu_handles();

/// Destroys what create_gpu_handles() made (null members are skipped); leaves `h` all null.
void destroy_gpu_handles(GpuHandles& h) noexcept;

/// Owns one GpuHandles for its lifetime. Not copyable.
class GpuContext {
 public:
  GpuContext() : h_(create_gpu_handles()) {}
  ~GpuContext() { destroy_gpu_handles(h_); }
  GpuContext(const GpuContext&) = delete;
  GpuContext& operator=(const GpuContext&) = delete;
  const GpuHandles& handles() const { return h_; }
  cudaStream_t stream() const { return h_.stream; }

 private:
  GpuHandles h_;
};

}  // namespace course
