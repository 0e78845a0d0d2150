// The reason a learner reads where a GPU is missing (test skips, the trainers'
// refusal, the comparison's skipped rows): CUDA's own words, what they mean on
// this machine, and what still works here. Pure: runs with or without a GPU.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "common/gpu/cuda_check.hpp"

using course::no_gpu_reason;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// EXPECTs that `why` says every one of `said` and none of `unsaid`.
void expect_words(const std::string& why, std::initializer_list<const char*> said,
                  std::initializer_list<const char*> unsaid = {}) {
  for (const char* part : said) EXPECT_TRUE(has(why, part)) << "no \"" << part << "\" in: " << why;
  for (const char* part : unsaid) EXPECT_FALSE(has(why, part)) << "\"" << part << "\" in: " << why;
}

TEST(NoGpuReason, NoDriverSaysSoAndWhatStillWorks) {
  expect_words(no_gpu_reason(cudaErrorInsufficientDriver, 0, 13000),
               {"CUDA driver version is insufficient for CUDA runtime version", "this machine has no NVIDIA driver",
                "stages 01-03 run here", "docs/figures/"},
               {"update the driver"});
}

TEST(NoGpuReason, AnOldDriverIsNamedWithBothVersions) {
  expect_words(no_gpu_reason(cudaErrorInsufficientDriver, 12020, 13000),
               {"CUDA driver version is insufficient", "supports CUDA 12.2, older than the CUDA 13.0 runtime",
                "update the driver"},
               {"no NVIDIA driver"});
}

TEST(NoGpuReason, ADriverWithoutADevice) {
  expect_words(no_gpu_reason(cudaErrorNoDevice, 13000, 13000), {"the NVIDIA driver is installed but sees no GPU"});
  expect_words(no_gpu_reason(cudaSuccess, 13000, 13000), {"no CUDA device on this machine"});
}

TEST(NoGpuReason, OtherErrorsKeepCudasWordsAlone) {
  expect_words(no_gpu_reason(cudaErrorDevicesUnavailable, 13000, 13000), {"no usable GPU: cudaGetDeviceCount: "},
               {"stages 01-03 run here"});
}

TEST(NoGpuReason, AGpuOlderThanTuringIsNamedWithWhatItLacks) {
  expect_words(course::old_gpu_reason("Tesla P100-PCIE-16GB (sm_60)", 60),
               {"Tesla P100-PCIE-16GB (sm_60) has compute capability 6.0", "need 7.5 (Turing: T4, RTX 20) or newer",
                "stages 01-03 run here on the CPU"});
}

}  // namespace
