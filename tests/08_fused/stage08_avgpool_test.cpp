// Stage 08 without a GPU: average pooling is not fused. A spec with an avgpool
// layer is refused with std::invalid_argument naming the layer, its position and
// the stages that run it, before anything is allocated; the layer-by-layer
// traffic of such a model (what stages 05 and 06 move) still counts it.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "08_fused/fused_step.hpp"
#include "08_fused/fused_plan.hpp"
#include "s08_support.hpp"

using namespace course;

namespace {

std::string refusal(const std::string& spec) { return s08test::fusion_refusal(spec, {1, 12, 12}); }
using s08test::contains;

}  // namespace

TEST(Stage08_AvgPool, RefusedNamingTheLayerAndTheStagesThatRunIt) {
  for (const char* spec : {"conv8k3p1,relu,avgpool2,fc10", "conv8k3p1,avgpool2,fc10", "avgpool2,flatten,fc10",
                           "conv8k3p1,relu,pool2,conv8k3p1,relu,avgpool3s1p1,flatten,fc10"}) {
    const std::string why = refusal(spec);
    EXPECT_TRUE(contains(why, "'avgpool")) << spec << ": " << why;
    EXPECT_TRUE(contains(why, "average pooling runs on the GPU in stages 05, 06 and 07")) << spec << ": " << why;
  }
  EXPECT_TRUE(contains(refusal("conv8k3p1,relu,avgpool2,fc10"), "layer 3 'avgpool2'"));
  EXPECT_TRUE(contains(refusal("conv8k3p1,relu,pool2,conv8k3p1,relu,avgpool3s1p1,flatten,fc10"),
                       "layer 6 'avgpool3s1p1'"));
  EngineConfig cfg;
  cfg.arch = parse_arch("conv8k3p1,relu,avgpool2,flatten,fc10");
  cfg.input = {1, 12, 12};
  EXPECT_THROW(FusedStep::plan(cfg), std::invalid_argument);
}

// Forward x -> y and backward dy -> dx: one kernel each way, nothing recorded (a
// max-pool also writes and reads its arg-max).
TEST(Stage08_AvgPool, LayerByLayerTrafficCountsIt) {
  const KernelTraffic avg = layerwise_traffic(parse_arch("conv8k3p1,relu,avgpool2,flatten,fc10"), {1, 12, 12}, 10, 4);
  const KernelTraffic max = layerwise_traffic(parse_arch("conv8k3p1,relu,pool2,flatten,fc10"), {1, 12, 12}, 10, 4);
  EXPECT_EQ(avg.launches, max.launches);
  // The arg-max: 4 examples x 8 x 6 x 6 ints, written forward and read backward.
  EXPECT_EQ(max.bytes_written - avg.bytes_written, 4LL * 4 * 8 * 6 * 6);
  EXPECT_EQ(max.bytes_read - avg.bytes_read, 4LL * 4 * 8 * 6 * 6);
}
