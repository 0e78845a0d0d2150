// The planted bugs of planted_kernels.hpp. Test-only.
#include <cuda.h>
#include <cudaTypedefs.h>

#include <string>

#include "common/gpu/cuda_check.hpp"
#include "planted_kernels.hpp"

namespace course::planted {

namespace {

// A driver API function, found through the runtime (no link to libcuda needed).
template <typename Fn>
Fn driver_function(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  CUDA_CHECK(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || fn == nullptr)
    throw GpuError(std::string("the CUDA driver has no ") + name + " (virtual memory management)");
  return reinterpret_cast<Fn>(fn);
}

void check(CUresult r, const char* call) {
  if (r != CUDA_SUCCESS) throw GpuError(std::string(call) + " failed: CUresult " + std::to_string(static_cast<int>(r)));
}

CUmemAllocationProp device_memory() {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

__global__ void matmul_grid_without_bounds_check_kernel(const float* A, const float* B, float* C, int N, int K) {
  // Task 4.2's threads: row m from x, column n from y.
  const int m = blockIdx.x * blockDim.x + threadIdx.x;
  const int n = blockIdx.y * blockDim.y + threadIdx.y;
  // The planted bug: no `if (m < M && n < N) ...`.
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc += A[m * K + k] * B[k * N + n];
  C[m * N + n] = acc;
}

__global__ void spin_forever_kernel(const volatile int* flag) {
  while (*flag == 0) {
  }
}

__global__ void fill_kernel(float* x) { x[threadIdx.x] = 1.f; }

}  // namespace

GuardedBuffer::GuardedBuffer(std::size_t n) {
  CUDA_CHECK(cudaFree(nullptr));  // the runtime's context exists before the driver calls
  const CUmemAllocationProp prop = device_memory();
  check(driver_function<PFN_cuMemGetAllocationGranularity_v10020>("cuMemGetAllocationGranularity")(
            &granule_, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
        "cuMemGetAllocationGranularity");
  const std::size_t bytes = n * sizeof(float);
  if (bytes > granule_) throw GpuError("GuardedBuffer: at most " + std::to_string(granule_) + " bytes");
  // Two granules of addresses, only the first backed by memory.
  CUdeviceptr base = 0;
  check(driver_function<PFN_cuMemAddressReserve_v10020>("cuMemAddressReserve")(&base, 2 * granule_, 0, 0, 0),
        "cuMemAddressReserve");
  base_ = base;
  CUmemGenericAllocationHandle handle = 0;
  check(driver_function<PFN_cuMemCreate_v10020>("cuMemCreate")(&handle, granule_, &prop, 0), "cuMemCreate");
  handle_ = handle;
  check(driver_function<PFN_cuMemMap_v10020>("cuMemMap")(base, granule_, 0, handle, 0), "cuMemMap");
  mapped_ = true;
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  check(driver_function<PFN_cuMemSetAccess_v10020>("cuMemSetAccess")(base, granule_, &access, 1), "cuMemSetAccess");
  data_ = reinterpret_cast<float*>(base + granule_ - bytes);
}

GuardedBuffer::~GuardedBuffer() {
  // After the fault these fail (the context is lost); there is nothing else to do.
  try {
    if (mapped_) driver_function<PFN_cuMemUnmap_v10020>("cuMemUnmap")(base_, granule_);
    if (handle_ != 0) driver_function<PFN_cuMemRelease_v10020>("cuMemRelease")(handle_);
    if (base_ != 0) driver_function<PFN_cuMemAddressFree_v10020>("cuMemAddressFree")(base_, 2 * granule_);
  } catch (const GpuError&) {
  }
}

void matmul_grid_without_bounds_check_gpu(const float* A, const float* B, float* C, int M, int N, int K) {
  const dim3 block(32, 8), grid((M + 31) / 32, (N + 7) / 8);  // as Task 4.2 launches it
  matmul_grid_without_bounds_check_kernel<<<grid, block>>>(A, B, C, N, K);
  CUDA_CHECK_LAUNCH();
}

void spin_forever_gpu(const int* flag) {
  spin_forever_kernel<<<1, 1>>>(flag);
  CUDA_CHECK_LAUNCH();
}

void launch_a_block_too_large_gpu(float* x) {
  fill_kernel<<<1, 2048>>>(x);
  CUDA_CHECK_LAUNCH();
}

}  // namespace course::planted
