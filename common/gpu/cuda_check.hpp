/// @file cuda_check.hpp
/// @brief CUDA and cuBLAS error checks that name the call, the file and the line; GPU detection.
///
/// Every CUDA runtime and cuBLAS call in the course goes through CUDA_CHECK or
/// CUBLAS_CHECK; a failure throws course::GpuError, which the trainer prints
/// as one line and turns into a non-zero exit. After a kernel launch,
/// CUDA_CHECK_LAUNCH() catches bad launch configurations at once.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/gpu/gpu_capability.hpp"

namespace course {

/// A failed CUDA, cuBLAS or cuDNN call.
class GpuError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Throws GpuError("<call> failed at <file>:<line>: <reason>").
[[noreturn]] inline void throw_gpu_error(const char* call, const char* file, int line, const std::string& why) {
  throw GpuError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " + why);
}

/// A name for a cuBLAS status (cuBLAS has cublasGetStatusString since 11.4).
inline std::string cublas_status_name(cublasStatus_t s) { return cublasGetStatusString(s); }

/// What a learner can still do on a machine without a usable GPU, appended to every
/// no-GPU reason (test skips, the trainers' refusal, the comparison's skipped rows).
inline constexpr const char* kWithoutGpuHere =
    "stages 01-03 run here on the CPU; the GPU stages, 04 and later, build here and can be read; their "
    "figures, measured on an H100, are in docs/figures/ and in the lessons";

/// Why no GPU can be used, in words a learner can act on. `err` is what
/// cudaGetDeviceCount returned (cudaSuccess when it ran and counted no device);
/// `driver` and `runtime` are cudaDriverGetVersion and
/// cudaRuntimeGetVersion (1000 * major + 10 * minor; a driver of 0 means none is
/// installed). CUDA's own words come first, so the message can be searched for.
inline std::string no_gpu_reason(cudaError_t err, int driver, int runtime) {
  const auto version = [](int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); };
  if (err == cudaSuccess)
    return std::string("no CUDA device on this machine (the NVIDIA driver is installed but lists no GPU): ") +
           kWithoutGpuHere;
  const std::string why = std::string("no usable GPU: cudaGetDeviceCount: ") + cudaGetErrorString(err);
  if (err == cudaErrorNoDevice)
    return why + " (the NVIDIA driver is installed but sees no GPU): " + kWithoutGpuHere;
  if (err == cudaErrorInsufficientDriver && driver == 0)
    return why + " (this machine has no NVIDIA driver, hence no GPU to run on): " + kWithoutGpuHere;
  if (err == cudaErrorInsufficientDriver)
    return why + " (the NVIDIA driver supports CUDA " + version(driver) + ", older than the CUDA " + version(runtime) +
           " runtime this build uses: update the driver): " + kWithoutGpuHere;
  return why;
}

/// "NVIDIA H100 80GB HBM3 (sm_90)"
inline std::string gpu_name() {
  int dev = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) return "unknown GPU";
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ")";
}

/// Why a GPU of compute capability `cc` (times ten, below 7.5) cannot run the course.
inline std::string old_gpu_reason(const std::string& name, int cc) {
  return "no usable GPU: " + name + " has compute capability " + capability_text(cc) +
         "; CUDA 13 and the course need " + capability_text(kLowestComputeCapability) +
         " (Turing: T4, RTX 20) or newer: " + kWithoutGpuHere + " (docs/colab.ipynb runs them on a rented GPU)";
}

/// True when a CUDA device can be used; otherwise false and `why` says why
/// (no_gpu_reason: CUDA's words, what they mean, what still works here). Tests skip with it.
inline bool gpu_available(std::string* why = nullptr) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    if (why) {
      int driver = 0, runtime = 0;
      cudaDriverGetVersion(&driver);
      cudaRuntimeGetVersion(&runtime);
      *why = no_gpu_reason(err, driver, runtime);
    }
    cudaGetLastError();  // clear the sticky error so later checks are not confused by it
    return false;
  }
  // CUDA 13 builds nothing for GPUs older than Turing: no kernel of the course could start there.
  if (const int cc = device_capability(); cc > 0 && cc < kLowestComputeCapability) {
    if (why) *why = old_gpu_reason(gpu_name(), cc);
    return false;
  }
  return true;
}

/// Device memory of n elements of T, freed on destruction. Not copyable.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t n) { resize(n); }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), n_(o.n_) { o.ptr_ = nullptr, o.n_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(n_, o.n_);
    return *this;
  }
  /// Reallocates to n elements (contents are lost when the size changes).
  void resize(std::size_t n) {
    if (n == n_) return;
    cudaFree(ptr_);
    ptr_ = nullptr;
    n_ = 0;
    if (n) {
      const cudaError_t e = cudaMalloc(&ptr_, n * sizeof(T));
      if (e != cudaSuccess)
        throw_gpu_error("cudaMalloc", __FILE__, __LINE__,
                        std::to_string(n * sizeof(T)) + " bytes: " + cudaGetErrorString(e));
    }
    n_ = n;
  }
  T* get() { return ptr_; }
  const T* get() const { return ptr_; }
  std::size_t size() const { return n_; }
  /// Copies host data in (n_ elements unless n is given).
  void upload(const T* host, std::size_t n = 0) {
    const cudaError_t e = cudaMemcpy(ptr_, host, (n ? n : n_) * sizeof(T), cudaMemcpyHostToDevice);
    if (e != cudaSuccess) throw_gpu_error("cudaMemcpy(HostToDevice)", __FILE__, __LINE__, cudaGetErrorString(e));
  }
  void upload(const std::vector<T>& host) {
    resize(host.size());
    upload(host.data(), host.size());
  }
  /// Copies everything out to a host vector.
  std::vector<T> download() const {
    std::vector<T> host(n_);
    const cudaError_t e = cudaMemcpy(host.data(), ptr_, n_ * sizeof(T), cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) throw_gpu_error("cudaMemcpy(DeviceToHost)", __FILE__, __LINE__, cudaGetErrorString(e));
    return host;
  }

 private:
  T* ptr_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace course

/// What every *_CHECK macro does: the status `call` returns, if it is not `ok`, throws GpuError naming
/// `text` (the call as written), the file, the line and describe(status).
#define COURSE_STATUS_CHECK(text, call, ok, describe)                                                 \
  do {                                                                                                \
    const auto course_status_ = (call);                                                               \
    if (course_status_ != (ok)) ::course::throw_gpu_error(text, __FILE__, __LINE__, describe(course_status_)); \
  } while (0)

/// Checks a CUDA runtime call: CUDA_CHECK(cudaMemcpy(...)).
#define CUDA_CHECK(call) COURSE_STATUS_CHECK(#call, call, cudaSuccess, cudaGetErrorString)

/// Checks the launch just made (bad grid or block sizes, too much shared memory).
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

/// Checks a cuBLAS call.
#define CUBLAS_CHECK(call) COURSE_STATUS_CHECK(#call, call, CUBLAS_STATUS_SUCCESS, ::course::cublas_status_name)
