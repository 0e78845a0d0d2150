// The stage 09 all-reduce sweep: what one all-reduce of a gradient costs, by size, against the ring cost model.
//
//   s09_allreduce_sweep                  every GPU CUDA shows; the course's models' gradients, then 4 KiB ... 64 MiB
//   s09_allreduce_sweep --ranks 1 --csv allreduce.csv
//
// Each all-reduce is the trainer's: floats, in place, the pre-multiplied sum
// with every rank's weight 1/N (Task 9.2's op). One process drives every rank
// here (ncclCommInitAll, and one group call per all-reduce): the simplest way to
// time a collective alone; the trainer runs one process per GPU. A call's time
// is the slowest rank's (CUDA events on each GPU's stream); each figure is the
// median of the timed calls after two untimed ones. The result of the first call
// is checked: rank r holds r + 1 everywhere, so every value must end as the mean
// (N + 1) / 2; the program exits 1 otherwise.
//
// The ring cost model: T(S) = alpha + 2 (N - 1) / N * S / beta. The sweep fits
// alpha and beta to its own figures (least squares) and prints the model beside
// each measurement. With one rank no byte crosses to another GPU: NCCL runs one
// kernel that multiplies the buffer by the weight in place, and the figure is
// the fixed cost of a collective call plus reading and writing S bytes of the
// GPU's own memory. Then the fit is T(S) = alpha + S / beta with beta that
// local rate, and the ring's term is zero.
//
// Where every GPU can address every other's memory, the sweep also times the
// trainer's --allreduce peer (peer_allreduce.hpp): one kernel per GPU that writes
// its weighted values into the others' memory and sums what they wrote; here the
// one process maps the other GPUs' buffers by peer access instead of CUDA IPC.
// Its result is checked the same way, and printed beside NCCL's ("peer us").
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "09_multi_gpu/communicator.hpp"
#include "09_multi_gpu/flat_allreduce.hpp"
#include "09_multi_gpu/peer_allreduce.hpp"
#include "09_multi_gpu/scaling_models.hpp"
#include "benchmarks/support/gpu_timing.hpp"
#include "common/model/arch.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/multi_gpu/nccl_check.hpp"
#include "common/train/trainer.hpp"

namespace {

struct Options {
  int ranks = 0;  // 0: every GPU
  int min_runs = 30;
  double min_ms = 50;
  std::string csv;
};

struct Size {
  std::string label;
  std::size_t floats;
};

// The GPUs of the sweep: each with its stream, communicator, weight, op and buffer.
struct Rank {
  int device = 0;
  cudaStream_t stream = nullptr;
  ncclComm_t comm = nullptr;
  float* weight = nullptr;
  ncclRedOp_t op{};
  float* values = nullptr;
  std::size_t capacity = 0;
  cudaEvent_t start = nullptr, stop = nullptr;
  void* inbox = nullptr;           // the peer sum's inbox on this GPU
  unsigned* calls = nullptr;
  course::PeerSumArgs peer;        // its arguments: every GPU's inbox as peer pointers
};

// Whether the ranks' GPUs can all address each other's memory: the peer sum can run.
bool peers_reachable(int N) {
  if (N < 2) return false;
  for (int a = 0; a < N; ++a)
    for (int b = 0; b < N; ++b) {
      int can = 0;
      if (a != b && (cudaDeviceCanAccessPeer(&can, a, b) != cudaSuccess || !can)) return false;
    }
  return true;
}

// Each GPU's inbox for `largest` values, peer access to the others, and the kernel's arguments.
void set_up_peer_sum(std::vector<Rank>& ranks, std::size_t largest) {
  const int N = static_cast<int>(ranks.size());
  const std::size_t inbox_bytes = course::peer_inbox_bytes(N, largest);
  for (Rank& r : ranks) {
    CUDA_CHECK(cudaSetDevice(r.device));
    for (const Rank& other : ranks)
      if (other.device != r.device) CUDA_CHECK(cudaDeviceEnablePeerAccess(other.device, 0));
    CUDA_CHECK(cudaMalloc(&r.inbox, inbox_bytes));
    CUDA_CHECK(cudaMemset(r.inbox, 0, inbox_bytes));
    CUDA_CHECK(cudaMalloc(&r.calls, course::kMaxPeerBlocks * sizeof(unsigned)));
    CUDA_CHECK(cudaMemset(r.calls, 0, course::kMaxPeerBlocks * sizeof(unsigned)));
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  for (int i = 0; i < N; ++i) {
    course::PeerSumArgs& a = ranks[static_cast<std::size_t>(i)].peer;
    a.weight = ranks[static_cast<std::size_t>(i)].weight;
    a.rank = i;
    a.world = N;
    a.calls = ranks[static_cast<std::size_t>(i)].calls;
    for (int q = 0; q < N; ++q) course::set_peer_inbox(a, q, ranks[static_cast<std::size_t>(q)].inbox);
  }
}

// One all-reduce of `floats` values on every rank, as one group (one thread drives them all);
// with `peer`, the peer sum's kernel on every GPU instead (each waits on the GPU for the others').
void allreduce_all(std::vector<Rank>& ranks, std::size_t floats, bool peer) {
  if (peer) {
    for (Rank& r : ranks) {
      CUDA_CHECK(cudaSetDevice(r.device));
      r.peer.gradients = r.values;
      r.peer.count = floats;
      course::launch_peer_sum(r.peer, r.stream);
    }
    return;
  }
  NCCL_CHECK(ncclGroupStart());
  for (Rank& r : ranks) course::allreduce_weighted(r.values, floats, r.op, r.comm, r.stream);
  NCCL_CHECK(ncclGroupEnd());
}

// The milliseconds of one all-reduce of `floats` values: each rank's events on its own
// stream, the slowest rank's time.
double slowest_rank_ms(std::vector<Rank>& ranks, std::size_t floats, bool peer) {
  for (Rank& r : ranks) {
    CUDA_CHECK(cudaSetDevice(r.device));
    CUDA_CHECK(cudaEventRecord(r.start, r.stream));
  }
  allreduce_all(ranks, floats, peer);
  double slowest = 0;
  for (Rank& r : ranks) {
    CUDA_CHECK(cudaSetDevice(r.device));
    CUDA_CHECK(cudaEventRecord(r.stop, r.stream));
  }
  for (Rank& r : ranks) {
    CUDA_CHECK(cudaEventSynchronize(r.stop));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, r.start, r.stop));
    slowest = std::max(slowest, static_cast<double>(ms));
  }
  return slowest;
}

// The median milliseconds of one all-reduce of `floats` values (the slowest rank's time per
// call), after two untimed ones; the sweeps' rule of runs (gpu_timing.hpp).
double time_allreduce(std::vector<Rank>& ranks, std::size_t floats, bool peer, const Options& o) {
  for (int warm = 0; warm < 2; ++warm) allreduce_all(ranks, floats, peer);
  return course::bench::median_of_runs([&] { return slowest_rank_ms(ranks, floats, peer); },
                                       {o.min_runs, o.min_ms, 2000});
}

// Sets rank r's values to r + 1, all-reduces once, and checks every value is (N + 1) / 2.
bool check_mean(std::vector<Rank>& ranks, std::size_t floats, bool peer) {
  const int N = static_cast<int>(ranks.size());
  for (int i = 0; i < N; ++i) {
    CUDA_CHECK(cudaSetDevice(ranks[i].device));
    const std::vector<float> mine(floats, static_cast<float>(i + 1));
    CUDA_CHECK(cudaMemcpy(ranks[i].values, mine.data(), floats * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaDeviceSynchronize());  // a copy from pageable memory may still be landing when cudaMemcpy returns
  }
  allreduce_all(ranks, floats, peer);
  const float want = static_cast<float>(N + 1) / 2.f;
  for (Rank& r : ranks) {
    CUDA_CHECK(cudaSetDevice(r.device));
    CUDA_CHECK(cudaStreamSynchronize(r.stream));
    std::vector<float> got(floats);
    CUDA_CHECK(cudaMemcpy(got.data(), r.values, floats * sizeof(float), cudaMemcpyDeviceToHost));
    for (float v : got)
      if (std::fabs(v - want) > 1e-5f * want) return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Stage 09 all-reduce sweep: the time of one all-reduce of the gradients, against the ring cost model"};
  app.add_option("--ranks", o.ranks, "GPUs (ranks) to all-reduce over (default: every GPU CUDA shows)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--min-runs", o.min_runs, "At least this many timed calls per size")->check(CLI::PositiveNumber);
  app.add_option("--min-ms", o.min_ms, "Keep timing each size until this many milliseconds");
  app.add_option("--csv", o.csv, "Write every figure to FILE as CSV");
  CLI11_PARSE(app, argc, argv);
  try {
    course::keep_nvlink_multicast_off();
    std::string why;
    if (!course::gpu_available(&why)) {
      std::cerr << "s09_allreduce_sweep needs a CUDA GPU: " << why << "\n";
      return 1;
    }
    int visible = 0;
    CUDA_CHECK(cudaGetDeviceCount(&visible));
    const int N = o.ranks > 0 ? o.ranks : visible;
    if (N > visible) {
      std::cerr << "--ranks " << N << ": CUDA shows " << visible << " GPU" << (visible == 1 ? "" : "s") << "\n";
      return 2;
    }
    const course::NcclVersions versions = course::check_nccl_versions();

    // The sizes: each model's gradient (1x28x28 inputs, 10 classes), then powers of 4 from 4 KiB.
    std::vector<Size> sizes;
    for (const char* model : {"mlp", "cnn", "cnn-deep"})
      sizes.push_back({model, static_cast<std::size_t>(course::count_parameters(
                                  course::parse_arch(course::named_model_spec(model)), {1, 28, 28}, 10))});
    sizes.push_back({"wide", static_cast<std::size_t>(course::count_parameters(
                                 course::parse_arch(course::wide_model_spec()), {1, 28, 28}, 10))});
    for (std::size_t bytes = 4 << 10; bytes <= (std::size_t(64) << 20); bytes *= 4)
      sizes.push_back({std::to_string(bytes >> 10) + " KiB", bytes / sizeof(float)});
    std::size_t largest = 0;
    for (const Size& s : sizes) largest = std::max(largest, s.floats);

    std::vector<Rank> ranks(static_cast<std::size_t>(N));
    std::vector<int> devices;
    for (int i = 0; i < N; ++i) devices.push_back(i);
    std::vector<ncclComm_t> comms(static_cast<std::size_t>(N));
    NCCL_CHECK(ncclCommInitAll(comms.data(), N, devices.data()));
    const float weight = 1.f / static_cast<float>(N);
    for (int i = 0; i < N; ++i) {
      Rank& r = ranks[static_cast<std::size_t>(i)];
      r.device = i;
      r.comm = comms[static_cast<std::size_t>(i)];
      CUDA_CHECK(cudaSetDevice(i));
      CUDA_CHECK(cudaStreamCreate(&r.stream));
      CUDA_CHECK(cudaMalloc(&r.weight, sizeof(float)));
      CUDA_CHECK(cudaMemcpy(r.weight, &weight, sizeof(float), cudaMemcpyHostToDevice));
      r.op = course::create_weighted_sum(r.comm, r.weight);
      CUDA_CHECK(cudaMalloc(&r.values, largest * sizeof(float)));
      CUDA_CHECK(cudaMemset(r.values, 0, largest * sizeof(float)));
      CUDA_CHECK(cudaEventCreate(&r.start));
      CUDA_CHECK(cudaEventCreate(&r.stop));
      CUDA_CHECK(cudaDeviceSynchronize());
    }

    std::printf("all-reduce sweep: %d rank%s on %s, %s, NCCL_NVLS_ENABLE=%s\n", N, N == 1 ? "" : "s",
                course::gpu_name().c_str(), versions.describe().c_str(), course::keep_nvlink_multicast_off().c_str());
    const bool peer = peers_reachable(N);
    if (peer) set_up_peer_sum(ranks, largest);
    bool right = true, peer_right = true;
    std::vector<double> ms(sizes.size()), peer_ms(sizes.size(), 0.0);
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      right = check_mean(ranks, sizes[i].floats, false) && right;
      ms[i] = time_allreduce(ranks, sizes[i].floats, false, o);
      if (!peer) continue;
      peer_right = check_mean(ranks, sizes[i].floats, true) && peer_right;
      peer_ms[i] = time_allreduce(ranks, sizes[i].floats, true, o);
    }

    // Least-squares fit of T = alpha + x / beta, with x the bytes each rank sends
    // and receives in a ring, 2 (N - 1) / N * S (or S itself for one rank).
    const double ring = N > 1 ? 2.0 * (N - 1) / N : 1.0;
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const double x = ring * static_cast<double>(sizes[i].floats * sizeof(float)), y = ms[i] * 1e-3;
      sx += x, sy += y, sxx += x * x, sxy += x * y;
    }
    const double n = static_cast<double>(sizes.size());
    const double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    const double alpha = (sy - slope * sx) / n;
    const double beta = slope > 0 ? 1.0 / slope : INFINITY;

    std::printf("fit: T(S) = %.2f us + %s S / %.1f GB/s%s\n", alpha * 1e6,
                N > 1 ? (std::to_string(2 * (N - 1)) + "/" + std::to_string(N)).c_str() : "1 x", beta / 1e9,
                N > 1 ? " (ring)" : " (one rank: the GPU's own memory, read and written)");
    std::printf("%-10s %12s %10s %10s %12s %12s %10s\n", "gradient", "bytes", "us", "model us", "algbw GB/s",
                "busbw GB/s", "peer us");
    std::ofstream csv;
    if (!o.csv.empty()) {
      csv.open(o.csv);
      csv << "label,bytes,ranks,microseconds,model_microseconds,algbw_gbs,busbw_gbs,alpha_us,beta_gbs,nccl,"
             "peer_microseconds\n";
    }
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const double bytes = static_cast<double>(sizes[i].floats * sizeof(float));
      const double us = ms[i] * 1e3, model_us = (alpha + ring * bytes / beta) * 1e6;
      const double algbw = bytes / (ms[i] * 1e-3) / 1e9, busbw = N > 1 ? algbw * 2.0 * (N - 1) / N : 0.0;
      const std::string peer_us = peer ? std::to_string(peer_ms[i] * 1e3).substr(0, 6) : "-";
      std::printf("%-10s %12.0f %10.2f %10.2f %12.2f %12.2f %10s\n", sizes[i].label.c_str(), bytes, us, model_us,
                  algbw, busbw, peer_us.c_str());
      if (csv)
        csv << sizes[i].label << "," << bytes << "," << N << "," << us << "," << model_us << "," << algbw << ","
            << busbw << "," << alpha * 1e6 << "," << beta / 1e9 << "," << versions.describe() << ","
            << (peer ? std::to_string(peer_ms[i] * 1e3) : "") << "\n";
    }
    std::printf("every result the mean of the ranks' inputs: %s\n", right ? "yes" : "NO");
    if (peer)
      std::printf("peer sum (one kernel per GPU, writing into the others' memory): every result the mean: %s\n",
                  peer_right ? "yes" : "NO");
    else
      std::printf("peer sum: not timed (%s)\n", N < 2 ? "one rank" : "the GPUs cannot all address each other");
    right = right && peer_right;
    for (Rank& r : ranks) {
      CUDA_CHECK(cudaSetDevice(r.device));
      ncclRedOpDestroy(r.op, r.comm);
      ncclCommDestroy(r.comm);
      cudaFree(r.values);
      cudaFree(r.weight);
      cudaFree(r.inbox);
      cudaFree(r.calls);
      cudaEventDestroy(r.start);
      cudaEventDestroy(r.stop);
      cudaStreamDestroy(r.stream);
    }
    return right ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
