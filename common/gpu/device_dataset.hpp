/// @file device_dataset.hpp
/// @brief A data set copied to the device once per run, recognised again by a fingerprint (given code).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "common/gpu/cuda_check.hpp"
#include "common/data/data.hpp"

namespace course {

/// A data set copied to the device, and what identifies the copy.
struct DeviceDataset {
  std::uint64_t fingerprint = 0;
  int size = -1;               ///< examples held; -1: none yet (or an upload failed)
  DeviceBuffer<float> images;  ///< [size, D]
  DeviceBuffer<int> labels;    ///< [size]
};

/// Values a sampled image gives dataset_fingerprint: 16 floats, one 64-byte cache line.
inline constexpr long kFingerprintRun = 16;

/// A hash of the size, the shape, every label, the first and the last image whole, and
/// kFingerprintRun consecutive values of each of up to 4096 evenly spaced images (image s
/// from value s * kFingerprintRun on, wrapping): enough to tell one data set from another,
/// such as a resumed epoch's remaining examples from the full set. Every GPU epoch computes
/// it before its first step, so it reads little: for 60,000 images of 784 values, about 4,100
/// cache lines besides the labels (s04_bench's BM_DatasetFingerprint).
std::uint64_t dataset_fingerprint(const Dataset& d);

/// `slot`, holding `data`: uploaded unless `slot` holds it already (same size and
/// fingerprint). Waits for `stream` first, since queued work may still read the old copy.
/// Throws std::invalid_argument, before touching the device, for examples of another size
/// than `input`, an image buffer of the wrong length or a label outside [0, classes).
const DeviceDataset& upload_once(const Dataset& data, Shape3 input, int classes, DeviceDataset& slot,
                                 cudaStream_t stream = 0);

}  // namespace course
