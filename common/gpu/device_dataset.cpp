/// @file device_dataset.cpp
/// @brief The data set on the device: its fingerprint and the upload (see the header).
#include "common/gpu/device_dataset.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace course {

namespace {

// Mixes one 32-bit word into a 64-bit hash (a multiply-xorshift step).
std::uint64_t mix(std::uint64_t h, std::uint32_t word) {
  h = (h ^ word) * 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 29);
}

std::uint32_t bits_of(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

}  // namespace

std::uint64_t dataset_fingerprint(const Dataset& d) {
  const int n = d.size();
  const long D = d.shape.size();
  std::uint64_t h = mix(mix(0, static_cast<std::uint32_t>(n)), static_cast<std::uint32_t>(D));
  for (int y : d.labels) h = mix(h, static_cast<std::uint32_t>(y));
  if (n == 0) return h;
  for (long j = 0; j < D; ++j) h = mix(mix(h, bits_of(d.image(0)[j])), bits_of(d.image(n - 1)[j]));
  // One run of consecutive values an image, not values spread over it: each GPU epoch
  // computes this while the GPU waits, and a spread sample touches a cache line per value.
  const int images = std::min(n, 4096);
  const long run = std::min(D, kFingerprintRun);
  for (int s = 0; s < images; ++s) {
    const float* image = d.image(static_cast<int>(static_cast<long>(s) * n / images));
    const long first = static_cast<long>(s) * run % (D - run + 1);  // the run moves along the images
    for (long j = first; j < first + run; ++j) h = mix(h, bits_of(image[j]));
  }
  return h;
}

const DeviceDataset& upload_once(const Dataset& data, Shape3 input, int classes, DeviceDataset& slot,
                                 cudaStream_t stream) {
  if (data.shape.size() != input.size())
    throw std::invalid_argument("data set '" + data.name + "' has examples of " + data.shape.str() +
                                " but the model was built for " + input.str());
  if (data.images.size() != static_cast<std::size_t>(data.size()) * static_cast<std::size_t>(data.shape.size()))
    throw std::invalid_argument("data set '" + data.name + "' holds " + std::to_string(data.images.size()) +
                                " values for " + std::to_string(data.size()) + " examples of " + data.shape.str());
  const std::uint64_t fp = dataset_fingerprint(data);
  if (slot.size == data.size() && slot.fingerprint == fp) return slot;
  for (int i = 0; i < data.size(); ++i) {
    const int y = data.labels[static_cast<std::size_t>(i)];
    if (y < 0 || y >= classes)
      throw std::invalid_argument("data set '" + data.name + "': label " + std::to_string(y) + " of example " +
                                  std::to_string(i) + " is outside [0, " + std::to_string(classes) + ")");
  }
  slot.size = -1;  // until the upload has succeeded
  CUDA_CHECK(cudaStreamSynchronize(stream));  // queued steps may still read the old copy
  if (data.size() > 0) {
    slot.images.upload(data.images);
    slot.labels.upload(data.labels);
  }
  slot.size = data.size();
  slot.fingerprint = fp;
  return slot;
}

}  // namespace course
