/// @file peer_allreduce.hpp
/// @brief Stage 09: the weighted sum over the GPUs of one host in one kernel that reads and writes the other GPUs' memory (glue, not a task).
///
/// Why: an NCCL all-reduce call costs a fixed 26 to 35 µs on two GPUs of one
/// host before its first byte moves (lesson 09's sweep, T(S) = alpha + S / beta),
/// and the fused step of the `cnn` is about 100 µs, so two GPUs train at most
/// 2 x 100 / (100 + 30) = 1.5x one. NCCL pays that fixed cost for generality: a
/// ring of channels, protocols chosen by size, proxies for the network. Between
/// GPUs of one host that can address each other's memory (NVLink, or PCIe with
/// peer access), a sum of a few hundred KiB needs none of it.
///
/// **One shot.** Every rank exposes one buffer of its own (cudaIpcGetMemHandle:
/// another process of the host maps it with cudaIpcOpenMemHandle), its *inbox*:
/// a slot per rank for the weighted gradients. One kernel, launched by every rank
/// on its compute stream after the backward pass, cuts the gradient into the same
/// chunks on every rank, a chunk per block. Block b of rank r
///
/// 1. writes each value w_r g_r of chunk b into slot r of every other rank's inbox
///    (stores over NVLink), with this call's number in the same 8-byte store;
/// 2. sums chunk b over the ranks, in rank order, its own term w_r g_r computed
///    in place, each other rank's term read from its own inbox once the word
///    there carries this call's number, and writes the sum over its gradients.
///
/// **The value is its own flag** (the low-latency scheme NCCL uses for small
/// messages). An aligned 8-byte store lands whole, so a reader that sees this
/// call's number in a word sees the value stored with it: no fence at system scope
/// and no flag to raise and wait for after the data, at the price of twice the
/// bytes (636 KiB of `cnn` gradients cross as 1.24 MiB). On two H200s it took the
/// peer sum from 18 to 13 µs under --profile, and `cnn`'s epoch from 0.0533 to
/// 0.0517 s (lesson 09).
///
/// Every rank adds the same terms in the same order: every rank ends with the
/// same bits, as the update needs. With two ranks the sum is w_0 g_0 + w_1 g_1, the
/// same bits as NCCL's pre-multiplied sum (a + b = b + a in floating point).
///
/// **Two slots per rank, alternating by call.** Rank r may run ahead of rank q by
/// one call: having read q's values of call n, r can start call n + 1 and write into
/// q's inbox while q is still reading call n's values there. The values of call
/// n + 1 go to the other parity's slot; call n + 2 would reuse call n's, but r reaches
/// it only after reading q's values of call n + 1, which q writes only in its next
/// kernel, after its call n has finished reading (kernels on one stream run in
/// order). A reader waits for its call's number exactly, so a word left from call
/// n - 2 in the same slot is never taken for this call's.
///
/// A block waits on the GPU for the same block of the other GPUs, so every block
/// of the kernel must be running at once on every GPU: the grid is at most
/// kMaxPeerBlocks (128) blocks of 256 threads, fewer than the multiprocessors of a
/// GPU that has NVLink. The call number lives in device memory, so a CUDA graph
/// replays the kernel as it is. A rank that dies leaves the others waiting in the
/// kernel: the watchdog (common/multi_gpu/watchdog.hpp) sees the GPU stop making
/// progress and ends the rank, as it does for NCCL.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "common/gpu/engine_parts.hpp"
#include "09_multi_gpu/allreduce_timing.hpp"

namespace course {

/// The most ranks, and the most blocks of one call.
constexpr int kMaxPeerRanks = 8;
constexpr int kMaxPeerBlocks = 128;

/// What the kernel needs: this rank's gradients and weight, every rank's inbox as this process maps it.
struct PeerSumArgs {
  float* gradients = nullptr;          ///< [count], summed in place
  const float* weight = nullptr;       ///< this rank's weight (device memory, read when the kernel runs)
  std::size_t count = 0;
  int rank = 0, world = 1;
  /// rank q's inbox: [2 parities][world slots][count] words, each a value's bits (low 32) and the
  /// number of the call that wrote it (high 32)
  std::uint64_t* inbox[kMaxPeerRanks] = {};
  unsigned* calls = nullptr;           ///< this rank's call number per block [kMaxPeerBlocks]
};

/// Bytes of one rank's inbox for calls of up to `count` values: the slots [2 parities][world][count],
/// 8-byte words. Zero it before any rank uses it (no call is number 0).
std::size_t peer_inbox_bytes(int world, std::size_t count);

/// Points args.inbox[q] at rank q's inbox, an allocation of peer_inbox_bytes() at `base` as this
/// process maps it.
void set_peer_inbox(PeerSumArgs& args, int q, void* base);

/// Blocks of one call for `count` values: the same on every rank (it depends on the count alone).
int peer_sum_blocks(std::size_t count);

/// Queues the one-shot weighted sum on `stream` (peer_allreduce.cu); `early`: set up before the
/// kernel ahead of it has finished (programmatic dependent launch, sm_90 and later; its blocks
/// wait for that kernel's end before they touch memory).
void launch_peer_sum(const PeerSumArgs& args, cudaStream_t stream, bool early = false);

/// Why the ranks of `comm` cannot run the peer sum ("" when they can): the same
/// answer on every rank (a collective call). It needs every rank on one host and
/// every GPU able to address every other's memory (cudaDeviceCanAccessPeer).
std::string peer_sum_refusal(ncclComm_t comm, int rank, int world);

/// The one-shot sum of all the gradients after the backward pass (a GradientSync for the engine).
class PeerAllReduce : public GradientSync {
 public:
  /// Collective: every rank makes its own at the same point, after
  /// peer_sum_refusal() said "". `gradients`: the engine's flat buffer of `count`
  /// floats; `weight`: this rank's weight in device memory. Throws
  /// std::runtime_error naming the CUDA call that failed.
  PeerAllReduce(ncclComm_t comm, int rank, int world, const float* weight, float* gradients, std::size_t count,
                AllReduceTiming& timing);
  ~PeerAllReduce() override;
  PeerAllReduce(const PeerAllReduce&) = delete;
  PeerAllReduce& operator=(const PeerAllReduce&) = delete;

  /// Nothing yet: one call once the whole backward pass is queued.
  void gradients_queued(const GradientRange&, cudaStream_t) override {}
  bool uses_each_layer() const override { return false; }
  /// The one-shot sum on `stream`: the update after it on `stream` waits for it.
  void before_update(cudaStream_t stream) override;

 private:
  PeerSumArgs args_;
  std::uint64_t* own_ = nullptr;     // this rank's inbox, one allocation (what the others map)
  unsigned* calls_ = nullptr;
  bool early_ = false;               // launched early (gpu_has(GpuFeature::EarlyLaunch))
  std::vector<void*> mapped_;        // the other ranks' allocations as this process maps them
  AllReduceTiming& timing_;
  std::size_t row_ = 0;
};

}  // namespace course
