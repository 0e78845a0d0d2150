// The rules of common/gpu/gpu_features.def and COURSE_AS_CC's parsing (gpu_capability.hpp): no GPU
// needed, so CI checks them. On a GPU, every stage asks these to choose its kernels.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "common/gpu/gpu_capability.hpp"
#include "expect_contains.hpp"

using course::capability_has;
using course::chosen_capability;
using course::GpuFeature;

TEST(GpuCapability, FeaturesFollowTheirComputeCapabilities) {
  for (const GpuFeature f : {GpuFeature::CpAsync, GpuFeature::Tf32Mma, GpuFeature::Bf16Mma}) {
    EXPECT_FALSE(capability_has(75, f));
    for (const int cc : {80, 86, 89, 90, 100, 120}) EXPECT_TRUE(capability_has(cc, f)) << cc;
  }
  // sm_90a code runs on 9.0 alone; clusters and early launch from 9.0 on.
  for (const int cc : {75, 80, 86, 89, 100, 120}) EXPECT_FALSE(capability_has(cc, GpuFeature::Wgmma)) << cc;
  EXPECT_TRUE(capability_has(90, GpuFeature::Wgmma));
  for (const int cc : {75, 80, 86, 89}) EXPECT_FALSE(capability_has(cc, GpuFeature::EarlyLaunch)) << cc;
  for (const int cc : {90, 100, 120}) EXPECT_TRUE(capability_has(cc, GpuFeature::EarlyLaunch)) << cc;
}

TEST(GpuCapability, AsCcLowersTheCapabilityChosenBy) {
  EXPECT_EQ(chosen_capability(90, nullptr), 90);
  EXPECT_EQ(chosen_capability(90, ""), 90);
  EXPECT_EQ(chosen_capability(90, "7.5"), 75);
  EXPECT_EQ(chosen_capability(90, "8.0"), 80);
  EXPECT_EQ(chosen_capability(90, "9.0"), 90);
  EXPECT_EQ(chosen_capability(86, "8.6"), 86);
}

TEST(GpuCapability, AsCcRefusesWhatCannotBeChosenNamingTheVariable) {
  const auto error = [](int gpu, const char* text) {
    try {
      chosen_capability(gpu, text);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_CONTAINS(error(90, "sm_80"), "COURSE_AS_CC='sm_80': expected a compute capability such as 7.5");
  EXPECT_CONTAINS(error(90, "80"), "expected a compute capability");
  EXPECT_CONTAINS(error(90, "8.0.1"), "expected a compute capability");
  EXPECT_CONTAINS(error(90, "7.0"), "COURSE_AS_CC=7.0: the course runs on compute capability 7.5 or newer");
  EXPECT_CONTAINS(error(80, "9.0"), "COURSE_AS_CC=9.0 is newer than this GPU (8.0)");
}
