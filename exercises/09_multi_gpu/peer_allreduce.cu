/// @file peer_allreduce.cu
/// @brief Stage 09: the one-shot weighted sum over the GPUs of one host (the kernel; see peer_allreduce.hpp).
#include "09_multi_gpu/peer_allreduce.hpp"

#include "common/gpu/cuda_check.hpp"

namespace course {

namespace {

constexpr int kPeerThreads = 256;
constexpr std::size_t kValuesPerBlock = 2048;  // 8 a thread: enough blocks to spread a few hundred KiB

// A flag raised by another GPU is read and written at system scope: the data it
// announces was written over NVLink before it, by a thread of another device.
__device__ unsigned load_acquire_system(const unsigned* flag) {
  unsigned value;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(value) : "l"(flag) : "memory");
  return value;
}

__device__ void store_release_system(unsigned* flag, unsigned value) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(flag), "r"(value) : "memory");
}

// Block b of every rank owns the same chunk of the gradients (the grid is the same on
// every rank). __fmul_rn and __fadd_rn are never contracted into an FMA: every rank
// must round w_r g_r and each partial sum the same way, or the replicas drift apart.
__global__ void __launch_bounds__(kPeerThreads) peer_sum_kernel(PeerSumArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // Launched early (lesson 08's programmatic launch): wait here until the backward pass has finished.
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  __shared__ unsigned call_shared;
  const unsigned b = blockIdx.x;
  if (threadIdx.x == 0) call_shared = a.calls[b] + 1;
  __syncthreads();
  const unsigned call = call_shared;
  const std::size_t chunk = (a.count + gridDim.x - 1) / gridDim.x;
  const std::size_t lo = b * chunk;
  const std::size_t hi = lo + chunk < a.count ? lo + chunk : a.count;
  const float weight = *a.weight;
  const std::size_t slot = a.count;                                 // values of one rank's slot
  const std::size_t parity = (call & 1u) * static_cast<std::size_t>(a.world) * slot;

  // 1. This rank's weighted chunk into slot `rank` of every other rank's inbox.
  for (std::size_t i = lo + threadIdx.x; i < hi; i += kPeerThreads) {
    const float mine = __fmul_rn(weight, a.gradients[i]);
    for (int q = 0; q < a.world; ++q)
      if (q != a.rank) a.inbox[q][parity + a.rank * slot + i] = mine;
  }
  __syncthreads();  // every thread's stores are issued before thread 0 announces them
  if (threadIdx.x == 0) {
    __threadfence_system();
    for (int q = 0; q < a.world; ++q)
      if (q != a.rank) store_release_system(&a.flags[q][a.rank * kMaxPeerBlocks + b], call);
    // 2. Every other rank's chunk b of this call has landed here (a flag one call ahead counts too).
    for (int q = 0; q < a.world; ++q)
      if (q != a.rank)
        while (static_cast<int>(load_acquire_system(&a.flags[a.rank][q * kMaxPeerBlocks + b]) - call) < 0) {
        }
  }
  __syncthreads();

  // 3. The sum over the ranks in rank order; the inbox is read from L2 (__ldcg), never from
  //    a line this multiprocessor's L1 kept from an earlier call.
  const float* inbox = a.inbox[a.rank] + parity;
  for (std::size_t i = lo + threadIdx.x; i < hi; i += kPeerThreads) {
    const float mine = __fmul_rn(weight, a.gradients[i]);
    float sum = a.rank == 0 ? mine : __ldcg(inbox + i);
    for (int q = 1; q < a.world; ++q) sum = __fadd_rn(sum, q == a.rank ? mine : __ldcg(inbox + q * slot + i));
    a.gradients[i] = sum;
  }
  if (threadIdx.x == 0) a.calls[b] = call;
}

}  // namespace

int peer_sum_blocks(std::size_t count) {
  const std::size_t blocks = (count + kValuesPerBlock - 1) / kValuesPerBlock;
  return blocks < 1 ? 1 : blocks > static_cast<std::size_t>(kMaxPeerBlocks) ? kMaxPeerBlocks : static_cast<int>(blocks);
}

void launch_peer_sum(const PeerSumArgs& args, cudaStream_t stream, bool early) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(peer_sum_blocks(args.count)));
  config.blockDim = dim3(kPeerThreads);
  config.stream = stream;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attribute;
  config.numAttrs = early ? 1 : 0;
  CUDA_CHECK(cudaLaunchKernelEx(&config, peer_sum_kernel, args));
}

}  // namespace course
