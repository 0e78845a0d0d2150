/// @file gpu_profiler.cpp
/// @brief CUDA events around each piece of a step (see the header).
#include "common/gpu/gpu_profiler.hpp"

#include <stdexcept>

namespace course {

GpuProfiler::~GpuProfiler() {
  for (Section& s : sections_) {
    if (s.start) cudaEventDestroy(s.start);
    if (s.stop) cudaEventDestroy(s.stop);
  }
}

std::size_t GpuProfiler::add_row(const std::string& name) {
  if (!sections_.empty()) throw std::logic_error("GpuProfiler::add_row after enable()");
  times_.push_back({name, 0, 0, 0});
  ever_timed_.push_back(false);
  return times_.size() - 1;
}

void GpuProfiler::enable() {
  sections_.resize(2 * times_.size());
  for (Section& s : sections_) {
    CUDA_CHECK(cudaEventCreate(&s.start));
    CUDA_CHECK(cudaEventCreate(&s.stop));
  }
}

void GpuProfiler::collect() {
  std::vector<bool> touched(times_.size(), false);
  for (std::size_t i = 0; i < sections_.size(); ++i) {
    Section& s = sections_[i];
    if (!s.pending) continue;
    CUDA_CHECK(cudaEventSynchronize(s.stop));
    float ms = 0.f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, s.start, s.stop));
    LayerTime& t = times_[i / 2];
    (i % 2 == 0 ? t.forward_ms : t.backward_ms) += ms;
    touched[i / 2] = true;
    s.pending = false;
  }
  for (std::size_t r = 0; r < times_.size(); ++r)
    if (touched[r]) {
      ++times_[r].calls;
      ever_timed_[r] = true;
    }
}

void GpuProfiler::reset() {
  for (LayerTime& t : times_) {
    t.forward_ms = t.backward_ms = 0;
    t.calls = 0;
  }
}

}  // namespace course
