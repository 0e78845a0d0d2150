/// @file peer_allreduce.cpp
/// @brief Stage 09: who can run the peer sum, and each rank's inbox shared with the others (see peer_allreduce.hpp).
#include "09_multi_gpu/peer_allreduce.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "common/gpu/cuda_check.hpp"
#include "common/gpu/gpu_capability.hpp"
#include "common/multi_gpu/nccl_check.hpp"

namespace course {

namespace {

// What a rank tells the others, fixed-size so that an all-gather of bytes carries it.
struct PeerCard {
  char host[64] = {};
  char pci_bus_id[32] = {};   // "0000:60:00.0": the same GPU whatever index each process gives it
  char refusal[160] = {};     // why this rank cannot take part ("" when it can)
  cudaIpcMemHandle_t inbox{};
};

// Every rank's `mine`, in rank order, on every rank (ncclAllGather of the bytes).
std::vector<PeerCard> all_gather_cards(ncclComm_t comm, int rank, int world, const PeerCard& mine) {
  DeviceBuffer<PeerCard> cards(static_cast<std::size_t>(world));
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CUDA_CHECK(cudaMemcpyAsync(cards.get() + rank, &mine, sizeof(PeerCard), cudaMemcpyHostToDevice, stream));
  NCCL_CHECK(ncclAllGather(cards.get() + rank, cards.get(), sizeof(PeerCard), ncclUint8, comm, stream));
  std::vector<PeerCard> all(static_cast<std::size_t>(world));
  CUDA_CHECK(cudaMemcpyAsync(all.data(), cards.get(), world * sizeof(PeerCard), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  CUDA_CHECK(cudaStreamDestroy(stream));
  return all;
}

void copy_text(char* to, std::size_t size, const std::string& text) {
  std::strncpy(to, text.c_str(), size - 1);
  to[size - 1] = '\0';
}

PeerCard own_card() {
  PeerCard card;
  gethostname(card.host, sizeof(card.host) - 1);
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetPCIBusId(card.pci_bus_id, sizeof(card.pci_bus_id), device));
  return card;
}

// Why this rank cannot address the memory of every other rank's GPU ("" when it can).
std::string own_refusal(const std::vector<PeerCard>& cards, int rank) {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  for (int q = 0; q < static_cast<int>(cards.size()); ++q) {
    if (q == rank) continue;
    if (std::strcmp(cards[q].host, cards[rank].host) != 0)
      return "rank " + std::to_string(q) + " runs on host " + cards[q].host + ", not " + cards[rank].host;
    int other = -1;
    if (cudaDeviceGetByPCIBusId(&other, cards[q].pci_bus_id) != cudaSuccess) {
      cudaGetLastError();  // not sticky: clear it
      return std::string("CUDA does not show this process rank ") + std::to_string(q) + "'s GPU (" +
             cards[q].pci_bus_id + ")";
    }
    int can = 0;
    CUDA_CHECK(cudaDeviceCanAccessPeer(&can, device, other));
    if (!can)
      return std::string("GPU ") + cards[rank].pci_bus_id + " cannot address the memory of rank " +
             std::to_string(q) + "'s GPU " + cards[q].pci_bus_id + " (no peer access between them)";
  }
  return "";
}

}  // namespace

std::size_t peer_inbox_bytes(int world, std::size_t count) {
  return 2 * static_cast<std::size_t>(world) * count * sizeof(std::uint64_t);
}

void set_peer_inbox(PeerSumArgs& args, int q, void* base) {
  args.inbox[q] = static_cast<std::uint64_t*>(base);
}

std::string peer_sum_refusal(ncclComm_t comm, int rank, int world) {
  if (world > kMaxPeerRanks)
    return std::to_string(world) + " ranks, more than the " + std::to_string(kMaxPeerRanks) + " it sums";
  PeerCard mine = own_card();
  std::vector<PeerCard> cards = all_gather_cards(comm, rank, world, mine);
  copy_text(mine.refusal, sizeof(mine.refusal), own_refusal(cards, rank));
  cards = all_gather_cards(comm, rank, world, mine);  // every rank's answer, so that all decide alike
  for (int q = 0; q < world; ++q)
    if (cards[q].refusal[0] != '\0') return "rank " + std::to_string(q) + ": " + cards[q].refusal;
  return "";
}

PeerAllReduce::PeerAllReduce(ncclComm_t comm, int rank, int world, const float* weight, float* gradients,
                             std::size_t count, AllReduceTiming& timing)
    : timing_(timing) {
  // This rank's inbox, zero before any other rank can see it.
  const std::size_t inbox_bytes = peer_inbox_bytes(world, count);
  CUDA_CHECK(cudaMalloc(&own_, inbox_bytes));
  CUDA_CHECK(cudaMemset(own_, 0, inbox_bytes));
  CUDA_CHECK(cudaMalloc(&calls_, kMaxPeerBlocks * sizeof(unsigned)));
  CUDA_CHECK(cudaMemset(calls_, 0, kMaxPeerBlocks * sizeof(unsigned)));
  CUDA_CHECK(cudaDeviceSynchronize());

  PeerCard mine = own_card();
  CUDA_CHECK(cudaIpcGetMemHandle(&mine.inbox, own_));
  const std::vector<PeerCard> cards = all_gather_cards(comm, rank, world, mine);
  args_.gradients = gradients;
  args_.weight = weight;
  args_.count = count;
  args_.rank = rank;
  args_.world = world;
  args_.calls = calls_;
  early_ = gpu_has(GpuFeature::EarlyLaunch);
  for (int q = 0; q < world; ++q) {
    void* base = own_;
    if (q != rank) {
      CUDA_CHECK(cudaIpcOpenMemHandle(&base, cards[q].inbox, cudaIpcMemLazyEnablePeerAccess));
      mapped_.push_back(base);
    }
    set_peer_inbox(args_, q, base);
  }
  row_ = timing_.add_row("all-reduce, peer (" + std::to_string((count * sizeof(float) + 1023) / 1024) + " KiB)");
}

PeerAllReduce::~PeerAllReduce() {
  for (void* base : mapped_) cudaIpcCloseMemHandle(base);
  cudaFree(calls_);
  cudaFree(own_);
}

void PeerAllReduce::before_update(cudaStream_t stream) {
  // Under --profile the kernel sits between two events and is not launched early.
  timing_.time(row_, stream, [&] { launch_peer_sum(args_, stream, early_ && timing_.profiler == nullptr); });
}

}  // namespace course
