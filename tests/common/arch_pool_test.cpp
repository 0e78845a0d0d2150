// The avgpool token (parse, canonical text, shapes, has_conv) and the padding
// rule it shares with max-pool (P < K), as common/model/arch.hpp states them.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <stdexcept>

#include "common/model/arch.hpp"

using namespace course;
using ::testing::HasSubstr;

TEST(ArchPool, AvgPoolTokens) {
  const Arch a = parse_arch("conv8k3p1,relu,AvgPool2,avgpool3s1p1,avgpool2s2,pool2s2,flatten,fc10");
  ASSERT_EQ(a.layers.size(), 8u);
  EXPECT_EQ(a.layers[2].kind, LayerKind::AvgPool);
  EXPECT_EQ(a.layers[2].kernel, 2);
  EXPECT_EQ(a.layers[2].stride, 2);  // the stride defaults to the window
  EXPECT_EQ(a.layers[3].stride, 1);
  EXPECT_EQ(a.layers[3].pad, 1);
  EXPECT_EQ(a.layers[5].kind, LayerKind::MaxPool);
  EXPECT_EQ(a.spec(), "conv8k3p1,relu,avgpool2,avgpool3s1p1,avgpool2,pool2,flatten,fc10");
  EXPECT_TRUE(parse_arch("avgpool2,flatten,fc10").has_conv()) << "a pool needs an image";
  EXPECT_FALSE(parse_arch("fc20,relu,fc10").has_conv());
  EXPECT_TRUE(is_pool(LayerKind::AvgPool));
  EXPECT_TRUE(is_pool(LayerKind::MaxPool));
  EXPECT_FALSE(is_pool(LayerKind::Conv));
  // Shapes: the same arithmetic as max-pool. 28 -> 14 -> 14 -> 7 -> 3
  const auto s = layer_shapes(a, {1, 28, 28}, 10);
  EXPECT_EQ(s[2], (Shape3{8, 14, 14}));
  EXPECT_EQ(s[3], (Shape3{8, 14, 14}));
  EXPECT_EQ(s[4], (Shape3{8, 7, 7}));
  EXPECT_EQ(s[5], (Shape3{8, 3, 3}));
  try {
    layer_shapes(parse_arch("fc20,avgpool2,flatten,fc10"), {1, 28, 28}, 10);
    ADD_FAILURE() << "an average pool after a dense layer was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("avgpool2"));
  }
  EXPECT_THROW(layer_shapes(parse_arch("avgpool5,flatten,fc10"), {1, 4, 4}, 10), std::invalid_argument);
}

// P < K for both pools: P = K - 1 is accepted, P >= K refused, naming the layer and why.
TEST(ArchPool, PaddingRuleOfBothPools) {
  for (const char* ok : {"pool2p1,flatten,fc10", "avgpool2p1,flatten,fc10", "avgpool3s1p2,flatten,fc10",
                         "pool3s1p2,flatten,fc10"})
    EXPECT_NO_THROW(layer_shapes(parse_arch(ok), {1, 6, 6}, 10)) << ok;
  for (const char* bad : {"pool2p2,flatten,fc10", "avgpool2p2,flatten,fc10", "avgpool1p1,flatten,fc10",
                          "pool3s1p5,flatten,fc10", "avgpool", "avgpool2x", "avgpool2s0", "avgpool0"}) {
    try {
      parse_arch(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), HasSubstr("layer 1")) << bad;
    }
  }
  try {
    parse_arch("conv4k3,avgpool2p2,fc10");
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("layer 2 'avgpool2p2'"));
    EXPECT_THAT(e.what(), HasSubstr("only padding"));
  }
}
