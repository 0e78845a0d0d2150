// s05_pool_study: the max-pooling study (benchmarks/03_openmp/pool_study/pool_study.hpp) with the
// GPU's three ways of pooling one N x N image:
//
//   gpu_kernel          stage 05's maxpool_forward_gpu, the image already on the device; CUDA events
//                       around the launch (the median of many);
//   gpu_with_transfers  the image copied to the device, the same kernel, the pooled image copied
//                       back (the arg-max stays on the device, where the backward pass reads it),
//                       from and to ordinary pageable host memory, as a program that pools one
//                       image at a time does; CUDA events around the three;
//   gpu_per_window      the study's version: for every window, its cells copied to the device
//                       (one cudaMemcpy2D), a one-thread kernel that takes their largest, and that
//                       value copied back, window after window; the host clock around the image.
//
// Every output is checked against stage 02's, bit for bit (the arg-max too, where kept).
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "05_im2col_gemm/pool_gpu.hpp"
#include "benchmarks/03_openmp/pool_study/pool_study.hpp"
#include "benchmarks/support/gpu_timing.hpp"
#include "common/gpu/cuda_check.hpp"

namespace course::pool_study {
namespace {

/// The study's kernel: one thread takes the largest of n values (the first, where several are).
__global__ void window_max_kernel(const float* __restrict__ v, int n, float* __restrict__ out) {
  float best = v[0];
  for (int i = 1; i < n; ++i) best = v[i] > best ? v[i] : best;
  *out = best;
}

// The median of timed runs of `work` (GPU work queued on the default stream), each between two CUDA
// events, after one untimed run.
template <typename Work>
Figure events_median(Work&& work, const Rule& rule) {
  work();
  CUDA_CHECK(cudaDeviceSynchronize());
  bench::EventTimer timer;
  Figure f;
  f.seconds = 1e-3 * bench::median_of_runs(
                         [&] {
                           ++f.runs;
                           return timer.time_ms(work);
                         },
                         bench::Runs{rule.min_runs, rule.min_ms, rule.max_runs});
  return f;
}

class CudaPart : public GpuPart {
 public:
  bool usable(std::string* why) override {
    if (!gpu_available(why)) return false;
    // The first call of the runtime creates the context: timed, since a program that times its
    // first GPU call pays it (the study's figures at N = 4 are of that order).
    const auto t0 = std::chrono::steady_clock::now();
    CUDA_CHECK(cudaFree(nullptr));
    context_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return true;
  }
  std::string device() override { return gpu_name(); }
  double context_seconds() override { return context_s_; }

  Figure kernel_only(const Problem& p, const Rule& rule) override {
    DeviceBuffer<float> x, y(p.y.size());
    DeviceBuffer<int> a(p.y.size());
    x.upload(p.x);
    Figure f = events_median([&] { maxpool_forward_gpu(x.get(), y.get(), a.get(), 1, p.g); }, rule);
    f.matches = y.download() == p.y && a.download() == p.argmax;
    return f;
  }

  Figure with_transfers(const Problem& p, const Rule& rule) override {
    DeviceBuffer<float> x(p.x.size()), y(p.y.size());
    DeviceBuffer<int> a(p.y.size());
    std::vector<float> out(p.y.size(), 0.f);
    auto once = [&] {
      CUDA_CHECK(cudaMemcpy(x.get(), p.x.data(), p.x.size() * sizeof(float), cudaMemcpyHostToDevice));
      maxpool_forward_gpu(x.get(), y.get(), a.get(), 1, p.g);
      CUDA_CHECK(cudaMemcpy(out.data(), y.get(), out.size() * sizeof(float), cudaMemcpyDeviceToHost));
    };
    Figure f = events_median(once, rule);
    f.matches = out == p.y && a.download() == p.argmax;
    return f;
  }

  Figure per_window(const Problem& p, const Rule& rule) override {
    const PoolGeometry& g = p.g;
    const int Ho = g.out_h(), Wo = g.out_w();
    DeviceBuffer<float> window(static_cast<std::size_t>(g.K) * g.K), value(1);
    std::vector<float> out(p.y.size(), 0.f);
    auto windows = [&](int rows_of_windows, int windows_a_row) {
      for (int oh = 0; oh < rows_of_windows; ++oh)
        for (int ow = 0; ow < windows_a_row; ++ow) {
          const int top = oh * g.S - g.P, left = ow * g.S - g.P;
          const int h0 = std::max(top, 0), h1 = std::min(top + g.K, g.H);
          const int w0 = std::max(left, 0), w1 = std::min(left + g.K, g.W);
          const int rows = h1 - h0, cols = w1 - w0;
          CUDA_CHECK(cudaMemcpy2D(window.get(), cols * sizeof(float), p.x.data() + h0 * g.W + w0,
                                  g.W * sizeof(float), cols * sizeof(float), rows, cudaMemcpyHostToDevice));
          window_max_kernel<<<1, 1>>>(window.get(), rows * cols, value.get());
          CUDA_CHECK_LAUNCH();
          CUDA_CHECK(cudaMemcpy(&out[static_cast<std::size_t>(oh) * Wo + ow], value.get(), sizeof(float),
                                cudaMemcpyDeviceToHost));
        }
    };
    auto once = [&] { windows(Ho, Wo); };
    // Timed on the host: the copies wait for the host, which is what this version spends its time on.
    // One window first, untimed (the kernel's module is loaded at its first launch).
    windows(1, 1);
    std::vector<double> runs;
    double total = 0;
    while (static_cast<int>(runs.size()) < rule.min_runs ||
           (total * 1e3 < rule.min_ms && static_cast<int>(runs.size()) < rule.max_runs)) {
      const auto t0 = std::chrono::steady_clock::now();
      once();
      runs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      total += runs.back();
      if (total > 2.0) break;  // a large image: one run is seconds long already
    }
    std::sort(runs.begin(), runs.end());
    Figure f;
    f.seconds = runs[runs.size() / 2];
    f.runs = static_cast<int>(runs.size());
    f.matches = out == p.y;
    return f;
  }

 private:
  double context_s_ = 0;
};

}  // namespace
}  // namespace course::pool_study

int main(int argc, char** argv) {
  course::pool_study::CudaPart gpu;
  return course::pool_study::run(argc, argv, "s05_pool_study", &gpu);
}
