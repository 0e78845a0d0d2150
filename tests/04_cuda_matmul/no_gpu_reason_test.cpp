// The reason a learner reads where a GPU is missing (test skips, the trainers'
// refusal, the comparison's skipped rows): CUDA's own words, what they mean on
// this machine, and what still works here. Pure: runs with or without a GPU.
#include <gtest/gtest.h>

#include <string>

#include "common/gpu/cuda_check.hpp"

using course::no_gpu_reason;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(NoGpuReason, NoDriverSaysSoAndWhatStillWorks) {
  const std::string why = no_gpu_reason(cudaErrorInsufficientDriver, 0, 13000);
  EXPECT_TRUE(has(why, "CUDA driver version is insufficient for CUDA runtime version")) << why;
  EXPECT_TRUE(has(why, "this machine has no NVIDIA driver")) << why;
  EXPECT_TRUE(has(why, "stages 01-03 run here")) << why;
  EXPECT_TRUE(has(why, "docs/figures/")) << why;
  EXPECT_FALSE(has(why, "update the driver")) << why;
}

TEST(NoGpuReason, AnOldDriverIsNamedWithBothVersions) {
  const std::string why = no_gpu_reason(cudaErrorInsufficientDriver, 12020, 13000);
  EXPECT_TRUE(has(why, "CUDA driver version is insufficient")) << why;
  EXPECT_TRUE(has(why, "supports CUDA 12.2, older than the CUDA 13.0 runtime")) << why;
  EXPECT_TRUE(has(why, "update the driver")) << why;
  EXPECT_FALSE(has(why, "no NVIDIA driver")) << why;
}

TEST(NoGpuReason, ADriverWithoutADevice) {
  EXPECT_TRUE(has(no_gpu_reason(cudaErrorNoDevice, 13000, 13000), "the NVIDIA driver is installed but sees no GPU"));
  EXPECT_TRUE(has(no_gpu_reason(cudaSuccess, 13000, 13000), "no CUDA device on this machine"));
}

TEST(NoGpuReason, OtherErrorsKeepCudasWordsAlone) {
  const std::string why = no_gpu_reason(cudaErrorDevicesUnavailable, 13000, 13000);
  EXPECT_TRUE(has(why, "no usable GPU: cudaGetDeviceCount: ")) << why;
  EXPECT_FALSE(has(why, "stages 01-03 run here")) << why;
}

}  // namespace

TEST(NoGpuReason, AGpuOlderThanTuringIsNamedWithWhatItLacks) {
  const std::string why = course::old_gpu_reason("Tesla P100-PCIE-16GB (sm_60)", 60);
  EXPECT_TRUE(has(why, "Tesla P100-PCIE-16GB (sm_60) has compute capability 6.0")) << why;
  EXPECT_TRUE(has(why, "need 7.5 (Turing: T4, RTX 20) or newer")) << why;
  EXPECT_TRUE(has(why, "stages 01-03 run here on the CPU")) << why;
}
