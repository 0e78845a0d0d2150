// What every GPU test needs around the code it checks: skipping without a GPU, device copies of
// host vectors, device memory poisoned so that an element never written shows, and host copies
// that wait for the GPU first.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "common/gpu/cuda_check.hpp"

/// Skips the test, printing why, when no CUDA GPU can be used.
#ifndef SKIP_WITHOUT_GPU
#define SKIP_WITHOUT_GPU()                                     \
  do {                                                         \
    std::string why_;                                          \
    if (!::course::gpu_available(&why_)) GTEST_SKIP() << why_; \
  } while (0)
#endif

namespace course::gputest {

/// A device copy of a host vector (an empty vector gives an empty buffer).
template <typename T>
DeviceBuffer<T> to_device(const std::vector<T>& host) {
  DeviceBuffer<T> d;
  if (!host.empty()) d.upload(host);
  return d;
}

/// n elements of device memory with every byte 0xFF: NaN as floats, -1 as ints, 255 as bytes.
/// An output element the code under test forgets to write keeps it and fails the comparison.
template <typename T>
DeviceBuffer<T> poisoned(std::size_t n) {
  DeviceBuffer<T> d(n);
  if (n) CUDA_CHECK(cudaMemset(d.get(), 0xFF, n * sizeof(T)));
  return d;
}

/// A host copy of a device buffer. It waits for all GPU work first, on every stream, so that
/// an error of an earlier launch throws here, in the test that caused it.
template <typename T>
std::vector<T> to_host(const DeviceBuffer<T>& d) {
  CUDA_CHECK(cudaDeviceSynchronize());
  return d.size() ? d.download() : std::vector<T>();
}

}  // namespace course::gputest
