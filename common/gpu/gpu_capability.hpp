/// @file gpu_capability.hpp
/// @brief What this GPU can do: its compute capability, or the one COURSE_AS_CC asks the course to choose by.
///
/// The GPU stages choose their kernels by the features in gpu_features.def (cp.async, the
/// tensor cores' mma shapes, wgmma, clusters). A GPU is asked once; the answer is the
/// compute capability the course chooses by, written times ten (7.5 is 75, 9.0 is 90).
///
/// **COURSE_AS_CC** (environment) makes every stage choose as it would on an older GPU:
/// `COURSE_AS_CC=7.5 ctest ...` on an H100 runs the paths a T4 takes (the fallbacks are
/// tested on the GPU we have). It may only lower the capability: code built for 9.0 runs
/// the older paths, but an older GPU cannot run a newer one's instructions.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace course {

/// The features, named as in gpu_features.def.
enum class GpuFeature {
#define COURSE_GPU_FEATURE(id, lowest, highest, what, used_by, without) id,
#include "common/gpu/gpu_features.def"
#undef COURSE_GPU_FEATURE
};

/// One line of gpu_features.def.
struct GpuFeatureRule {
  GpuFeature id;
  int lowest;   ///< the first compute capability with the feature (times ten)
  int highest;  ///< the last one, or 0 for every later one too
  const char* what;
  const char* used_by;
  const char* without;  ///< what the course runs where the feature is missing
};

inline constexpr GpuFeatureRule kGpuFeatureRules[] = {
#define COURSE_GPU_FEATURE(id, lowest, highest, what, used_by, without) \
  {GpuFeature::id, lowest, highest, what, used_by, without},
#include "common/gpu/gpu_features.def"
#undef COURSE_GPU_FEATURE
};

/// The oldest GPU CUDA 13 compiles for, and so the course: 7.5 (Turing: T4, RTX 20).
inline constexpr int kLowestComputeCapability = 75;

inline const GpuFeatureRule& gpu_feature_rule(GpuFeature f) { return kGpuFeatureRules[static_cast<int>(f)]; }

/// True when a GPU of compute capability `cc` (times ten) has feature f.
inline bool capability_has(int cc, GpuFeature f) {
  const GpuFeatureRule& r = gpu_feature_rule(f);
  return cc >= r.lowest && (r.highest == 0 || cc <= r.highest);
}

/// "7.5" for 75.
inline std::string capability_text(int cc) { return std::to_string(cc / 10) + "." + std::to_string(cc % 10); }

/// The capability to choose by on a GPU of capability `gpu_cc`, given COURSE_AS_CC's text
/// (null or empty: the GPU's own). Throws std::invalid_argument, naming the variable, for a
/// text that is not "major.minor", is older than 7.5, or is newer than the GPU.
inline int chosen_capability(int gpu_cc, const char* as_cc) {
  if (as_cc == nullptr || *as_cc == '\0') return gpu_cc;
  const std::string text = as_cc;
  const auto dot = text.find('.');
  const bool digits = dot == 1 && text.size() == 3 && std::isdigit(static_cast<unsigned char>(text[0])) &&
                      std::isdigit(static_cast<unsigned char>(text[2]));
  if (!digits)
    throw std::invalid_argument("COURSE_AS_CC='" + text + "': expected a compute capability such as 7.5, 8.0, 8.6 or 8.9");
  const int cc = (text[0] - '0') * 10 + (text[2] - '0');
  if (cc < kLowestComputeCapability)
    throw std::invalid_argument("COURSE_AS_CC=" + text + ": the course runs on compute capability " +
                                capability_text(kLowestComputeCapability) + " or newer");
  if (cc > gpu_cc)
    throw std::invalid_argument("COURSE_AS_CC=" + text + " is newer than this GPU (" + capability_text(gpu_cc) +
                                "): it can only make the course choose as an older GPU would");
  return cc;
}

/// The current device's own compute capability (times ten).
inline int device_capability() {
  int dev = 0, major = 0, minor = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return major * 10 + minor;
}

/// The capability the course chooses by on the current device: its own, or COURSE_AS_CC's.
/// Asked once per device and process (kernel launchers ask it at every launch).
inline int chosen_capability() {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) {
    cudaGetLastError();
    return chosen_capability(device_capability(), std::getenv("COURSE_AS_CC"));
  }
  static std::atomic<int> asked[64] = {};  // 0: not asked yet
  int cc = asked[dev].load(std::memory_order_relaxed);
  if (cc == 0) {
    cc = chosen_capability(device_capability(), std::getenv("COURSE_AS_CC"));
    asked[dev].store(cc, std::memory_order_relaxed);
  }
  return cc;
}

/// True when the current device has feature f (as COURSE_AS_CC may lower it).
inline bool gpu_has(GpuFeature f) { return capability_has(chosen_capability(), f); }

/// "sm_90", or "sm_75 (COURSE_AS_CC=7.5 on an sm_90 GPU)": what the course chooses by, for a trainer's first lines.
inline std::string chosen_capability_note() {
  const int gpu = device_capability(), chosen = chosen_capability();
  const std::string sm = "sm_" + std::to_string(chosen);
  if (chosen == gpu) return sm;
  return sm + " (COURSE_AS_CC=" + capability_text(chosen) + " on an sm_" + std::to_string(gpu) + " GPU)";
}

/// "TF32 mma.sync needs compute capability 8.0 or newer" (or "9.0 exactly").
inline std::string feature_requirement(GpuFeature f) {
  const GpuFeatureRule& r = gpu_feature_rule(f);
  return std::string(r.what) + " needs compute capability " + capability_text(r.lowest) +
         (r.highest == r.lowest ? " exactly" : " or newer");
}

/// Why feature f is not used here and what runs instead: "TF32 mma.sync needs compute capability 8.0
/// or newer; choosing as sm_75: kernel 10 in FP32".
inline std::string without_feature_note(GpuFeature f) {
  return feature_requirement(f) + "; choosing as " + chosen_capability_note() + ": " + gpu_feature_rule(f).without;
}

}  // namespace course
