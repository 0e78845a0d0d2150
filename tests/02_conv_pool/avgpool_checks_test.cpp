// The checks around Task 2.8 that are not the task itself (so they are not part
// of its exercise proof):
// - Stage02_Checker: the gradient checker must reject the classic average-pool
//   mistakes, planted in avgpool_reference.hpp (independent of the learner's code);
// - Stage02_PoolPadding: the padding rule shared by max and average pooling
//   (P < K), in the spec parser, layer_shapes and the layers' geometry;
// - Stage02_CnnGradient: a CNN with average pools, checked end to end.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "02_conv_pool/cnn.hpp"
#include "avgpool_reference.hpp"
#include "course_test.hpp"
#include "network_gradcheck.hpp"

using namespace course;
using course::planted::AvgPoolMistake;

namespace {

GradCheckResult gradcheck_avgpool_mistake(int B, const PoolGeometry& g, AvgPoolMistake mistake) {
  auto x = testkit::random_vector(static_cast<std::size_t>(B) * g.in_size(), 101);
  const auto r = testkit::random_vector(static_cast<std::size_t>(B) * g.out_size(), 102);
  const auto dx = planted::avgpool_input_gradient(r, B, g, mistake);
  return check_gradient("dx of " + g.str("average-pool"), x.data(), {B, g.C, g.H, g.W}, dx.data(),
                        [&] { return testkit::weighted_sum(reference::avgpool_forward(x, B, g), r); });
}

std::string refusal(const PoolGeometry& g, const char* kind) {
  try {
    g.check(kind);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST(Stage02_Checker, AcceptsCorrectAvgPoolGradients) {
  EXPECT_GRADIENT_OK(gradcheck_avgpool_mistake(2, PoolGeometry{2, 7, 6, 3, 2, 1}, AvgPoolMistake::None));
  EXPECT_GRADIENT_OK(gradcheck_avgpool_mistake(1, PoolGeometry{2, 5, 5, 3, 1, 2}, AvgPoolMistake::None));
}

// The count_include_pad=False rule in the backward pass of a count_include_pad=True
// forward: the border cells of a padded pool get too much. Without padding every
// window holds K*K image cells and the two rules agree, so the check needs padding.
TEST(Stage02_Checker, RejectsAvgPoolGradientDividedByTheImageCells) {
  EXPECT_GRADIENT_REJECTED(gradcheck_avgpool_mistake(2, PoolGeometry{2, 6, 6, 2, 2, 1}, AvgPoolMistake::DivideByImageCells));
  EXPECT_GRADIENT_REJECTED(gradcheck_avgpool_mistake(1, PoolGeometry{2, 5, 7, 3, 1, 1}, AvgPoolMistake::DivideByImageCells));
  // Without padding the two divisors are the same.
  EXPECT_GRADIENT_OK(gradcheck_avgpool_mistake(2, PoolGeometry{2, 6, 6, 2, 2, 0}, AvgPoolMistake::DivideByImageCells));
}

TEST(Stage02_Checker, RejectsAvgPoolGradientNotDivided) {
  EXPECT_GRADIENT_REJECTED(gradcheck_avgpool_mistake(2, PoolGeometry{2, 6, 6, 2, 2, 0}, AvgPoolMistake::NoDivision));
}

TEST(Stage02_Checker, RejectsOverlappingAvgPoolGradientsOverwrittenInsteadOfSummed) {
  EXPECT_GRADIENT_REJECTED(gradcheck_avgpool_mistake(2, PoolGeometry{2, 6, 6, 3, 1, 0}, AvgPoolMistake::OverwriteInsteadOfSum));
  EXPECT_GRADIENT_REJECTED(gradcheck_avgpool_mistake(2, PoolGeometry{2, 7, 7, 3, 2, 1}, AvgPoolMistake::OverwriteInsteadOfSum));
}

// The Task 2.8 backward test names a failing answer that is exactly one of the
// planted mistakes; the correct answer and an unrelated wrong one get no name.
TEST(Stage02_Checker, NamesEachPlantedAvgPoolMistakeAndNothingElse) {
  const int B = 2;
  const PoolGeometry g{2, 7, 7, 3, 2, 1};
  const auto dy = testkit::random_vector(static_cast<std::size_t>(B) * g.out_size(), 103);
  const auto dx = [&](AvgPoolMistake m) { return planted::avgpool_input_gradient(dy, B, g, m); };
  const auto has = [](const std::string& text, const char* part) { return text.find(part) != std::string::npos; };
  EXPECT_TRUE(has(planted::avgpool_mistake(dx(AvgPoolMistake::DivideByImageCells), dy, B, g), "K*K whatever"));
  EXPECT_TRUE(has(planted::avgpool_mistake(dx(AvgPoolMistake::NoDivision), dy, B, g), "whole dy"));
  EXPECT_TRUE(has(planted::avgpool_mistake(dx(AvgPoolMistake::OverwriteInsteadOfSum), dy, B, g), "overwrites"));
  EXPECT_EQ(planted::avgpool_mistake(dx(AvgPoolMistake::None), dy, B, g), "");
  auto scaled = dx(AvgPoolMistake::None);
  for (double& v : scaled) v *= 2;
  EXPECT_EQ(planted::avgpool_mistake(scaled, dy, B, g), "");
}

// P < K for both kinds: then every window holds an image cell. Checked over every
// small geometry the rule accepts: the window of each output, cut to the image, is
// never empty, and no window reaches past the padded input.
TEST(Stage02_PoolPadding, EveryAcceptedWindowHoldsAnImageCell) {
  int geometries = 0;
  for (int K = 1; K <= 4; ++K)
    for (int P = 0; P < K; ++P)
      for (int S = 1; S <= 3; ++S)
        for (int H = 1; H <= 7; ++H) {
          const PoolGeometry g{1, H, H, K, S, P};
          if (K > H + 2 * P) continue;  // refused: the window is larger than the padded input
          ASSERT_EQ(refusal(g, "max-pool"), "(accepted)");
          ++geometries;
          for (int o = 0; o < g.out_h(); ++o) {
            const int top = o * S - P;
            EXPECT_LT(std::max(top, 0), std::min(top + K, H)) << g.str() << ": window " << o << " holds only padding";
            EXPECT_LE(top + K, H + P) << g.str() << ": window " << o << " reaches past the padding";
          }
        }
  EXPECT_GT(geometries, 100);
}

// P >= K: the first window (rows -P .. K-1-P) holds only padding. Refused by both
// kinds, in the geometry (naming the kind) and in the spec parser; P = K - 1 is accepted.
TEST(Stage02_PoolPadding, PaddingReachingTheWindowIsRefusedByBothKinds) {
  for (const char* kind : {"max-pool", "average-pool"}) {
    EXPECT_NE(refusal(PoolGeometry{1, 4, 4, 2, 2, 2}, kind).find("smaller than the window"), std::string::npos) << kind;
    EXPECT_NE(refusal(PoolGeometry{1, 4, 4, 2, 2, 2}, kind).find(kind), std::string::npos) << kind;
    EXPECT_NE(refusal(PoolGeometry{1, 8, 8, 3, 1, 4}, kind).find("smaller than the window"), std::string::npos) << kind;
    EXPECT_EQ(refusal(PoolGeometry{1, 4, 4, 2, 2, 1}, kind), "(accepted)") << kind;
    EXPECT_EQ(refusal(PoolGeometry{1, 4, 4, 3, 1, 2}, kind), "(accepted)") << kind;
  }
  for (const char* spec : {"pool2p2,flatten,fc10", "avgpool2p2,flatten,fc10", "avgpool2s1p3,flatten,fc10"}) {
    try {
      parse_arch(spec);
      ADD_FAILURE() << "accepted '" << spec << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("only padding"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(parse_arch("pool2p1,avgpool2p1,avgpool3s1p2,flatten,fc10").spec(),
            "pool2p1,avgpool2p1,avgpool3s1p2,flatten,fc10");
  // The lesson functions check before they touch memory.
  double buffer[16] = {};
  EXPECT_THROW(avgpool_forward(buffer, buffer, 1, PoolGeometry{1, 4, 4, 2, 2, 2}), std::invalid_argument);
  EXPECT_THROW(avgpool_backward(buffer, buffer, 1, PoolGeometry{1, 4, 4, 2, 2, 2}), std::invalid_argument);
}

// The layer the factory builds for an avgpool token: its name, token and shape.
TEST(Stage02_PoolPadding, AvgPoolLayerFromTheFactory) {
  Network<float> net(parse_arch("conv4k3p1,relu,avgpool3s2p1,pool2,avgpool2,flatten,fc10"), {1, 12, 12}, 10,
                     make_cnn_layer<float>);
  const auto& layers = net.layers();
  EXPECT_EQ(layers[2]->name(), "avgpool1");
  EXPECT_EQ(layers[2]->token(), "avgpool3s2p1");
  EXPECT_EQ(layers[2]->out_shape(), (Shape3{4, 6, 6}));  // (12 + 2 - 3) / 2 + 1
  EXPECT_EQ(layers[3]->name(), "pool1");
  EXPECT_EQ(layers[4]->name(), "avgpool2");
  EXPECT_EQ(layers[4]->out_shape(), (Shape3{4, 1, 1}));
  EXPECT_TRUE(layers[2]->params().empty());
}

// A whole small CNN with average pools (padded and overlapping), end to end:
// every parameter and the input, through stage 01's Network.
TEST(Stage02_CnnGradient, WithAveragePools) {
  const int B = 3, K = 4;
  const Shape3 input{2, 9, 8};
  Network<double> net(parse_arch("conv4k3p1,tanh,avgpool2p1,conv3k3,relu,avgpool3s1p1,pool2,flatten,fc4"), input, K,
                      make_cnn_layer<double>);
  net.init(35);
  for (auto* p : net.params())
    if (p->name.find("bias") != std::string::npos) p->value.data = testkit::random_vector(p->value.size(), 32, -0.5, 0.5);
  auto x = testkit::random_vector(static_cast<std::size_t>(B) * input.size(), 33);
  const auto labels = testkit::random_labels(B, K, 34);
  GradCheckOptions opt;
  opt.tolerance = 1e-5;
  testkit::expect_network_gradients_ok(net, x, labels, B, K, {B, input.c, input.h, input.w}, opt);
}
