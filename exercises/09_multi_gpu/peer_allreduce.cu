/// @file peer_allreduce.cu
/// @brief Stage 09: the one-shot weighted sum over the GPUs of one host (the kernel; see peer_allreduce.hpp).
#include "09_multi_gpu/peer_allreduce.hpp"

#include <cstdint>

#include "common/gpu/cuda_check.hpp"

namespace course {

namespace {

constexpr int kPeerThreads = 256;
constexpr std::size_t kValuesPerBlock = 2048;  // 8 a thread: enough blocks to spread a few hundred KiB

// A word of an inbox: a value's bits (low half) and the number of the call that wrote it (high
// half), stored and loaded whole, at system scope. An aligned 8-byte access is never split, so a
// reader that sees this call's number sees the value written with it: no fence, no flag.
__device__ std::uint64_t load_word(const std::uint64_t* word) {
  std::uint64_t value;
  asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(value) : "l"(word) : "memory");
  return value;
}

__device__ void store_word(std::uint64_t* word, std::uint64_t value) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(word), "l"(value) : "memory");
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
  const std::uint64_t tag = static_cast<std::uint64_t>(call) << 32;
  const std::size_t chunk = (a.count + gridDim.x - 1) / gridDim.x;
  const std::size_t lo = b * chunk;
  const std::size_t hi = lo + chunk < a.count ? lo + chunk : a.count;
  const float weight = *a.weight;
  const std::size_t slot = a.count;                                 // words of one rank's slot
  const std::size_t parity = (call & 1u) * static_cast<std::size_t>(a.world) * slot;

  // 1. This rank's weighted chunk, each value with this call's number, into slot `rank` of
  //    every other rank's inbox (stores over NVLink).
  for (std::size_t i = lo + threadIdx.x; i < hi; i += kPeerThreads) {
    const std::uint64_t word = tag | __float_as_uint(__fmul_rn(weight, a.gradients[i]));
    for (int q = 0; q < a.world; ++q)
      if (q != a.rank) store_word(a.inbox[q] + parity + a.rank * slot + i, word);
  }

  // 2. The sum over the ranks in rank order, each other rank's value read from this rank's own
  //    inbox once its word carries this call's number (a thread waits on the values it sums).
  const std::uint64_t* inbox = a.inbox[a.rank] + parity;
  for (std::size_t i = lo + threadIdx.x; i < hi; i += kPeerThreads) {
    const float mine = __fmul_rn(weight, a.gradients[i]);
    float sum = 0.f;
    for (int q = 0; q < a.world; ++q) {
      float term = mine;
      if (q != a.rank) {
        std::uint64_t word;
        do word = load_word(inbox + q * slot + i);
        while (static_cast<unsigned>(word >> 32) != call);
        term = __uint_as_float(static_cast<unsigned>(word));
      }
      sum = q == 0 ? term : __fadd_rn(sum, term);
    }
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
