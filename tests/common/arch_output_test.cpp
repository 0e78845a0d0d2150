// The practice's additions to architecture specs: leaky ReLU's slope in the token
// (leaky0.1), and the output activation after the last dense layer (fc10,sigmoid).
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <string>

#include "common/model/arch.hpp"
#include "error_of.hpp"

using namespace course;
using ::testing::HasSubstr;

namespace {

std::string error_of(const std::string& spec) {
  try {
    parse_arch(spec);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(ArchLeakySlope, TokenCarriesTheSlope) {
  const Arch a = parse_arch("fc8,leaky0.1,fc4,LEAKY,fc2");
  EXPECT_DOUBLE_EQ(a.layers[1].slope, 0.1);
  EXPECT_EQ(a.layers[1].act, Activation::LeakyReLU);
  EXPECT_DOUBLE_EQ(a.layers[3].slope, kDefaultLeakySlope);
  EXPECT_EQ(a.spec(), "fc8,leaky0.1,fc4,leaky,fc2") << "the default slope is not written";
  EXPECT_EQ(parse_arch("leaky0.01").spec(), "leaky") << "the default written out is the default";
  EXPECT_EQ(parse_arch("leaky.25").spec(), "leaky0.25");
  // Canonical text reads back as the same double, without an exponent.
  for (double s : {0.1, 0.2, 0.3, 1e-5, 0.123456789, 0.999, 1.0 / 3.0}) {
    const std::string text = slope_text(s);
    EXPECT_EQ(text.find_first_not_of("0123456789."), std::string::npos) << text;
    EXPECT_EQ(parse_arch("leaky" + text).layers[0].slope, s) << text;
  }
  EXPECT_EQ(slope_text(1e-5), "0.00001");
}

TEST(ArchLeakySlope, BadSlopesNameTheLayer) {
  for (const char* bad : {"leaky0", "leaky1", "leaky1.5", "leaky-0.1", "leaky0.1.2", "leaky.", "leakyx", "leaky1e-3"})
    EXPECT_THAT(error_of(std::string("fc4,") + bad + ",fc2"), HasSubstr("layer 2")) << bad;
  EXPECT_THAT(error_of("leaky2"), HasSubstr("0 < A < 1"));
}

TEST(ArchLeakySlope, WithLeakySlopeSetsEveryLeakyLayer) {
  const Arch a = with_leaky_slope(parse_arch("fc8,leaky,fc4,relu,fc2,leaky"), 0.3);
  EXPECT_EQ(a.spec(), "fc8,leaky0.3,fc4,relu,fc2,leaky0.3");
  EXPECT_TRUE(has_leaky_relu(a));
  EXPECT_TRUE(has_leaky_relu(a, /*other_slope=*/true));
  EXPECT_FALSE(has_leaky_relu(parse_arch("fc8,leaky,fc2"), /*other_slope=*/true));
  EXPECT_FALSE(has_leaky_relu(parse_arch("fc8,relu,fc2")));
  // The default leaves a spec's own slopes alone; another slope must agree with them.
  EXPECT_EQ(with_leaky_slope(parse_arch("fc8,leaky0.2,fc2"), kDefaultLeakySlope).spec(), "fc8,leaky0.2,fc2");
  EXPECT_EQ(with_leaky_slope(parse_arch("fc8,leaky0.2,fc2"), 0.2).spec(), "fc8,leaky0.2,fc2");
  EXPECT_THROW(with_leaky_slope(parse_arch("fc8,leaky0.2,fc2"), 0.1), std::invalid_argument);
  EXPECT_THROW(with_leaky_slope(parse_arch("fc8,leaky,fc2"), 0.0), std::invalid_argument);
  EXPECT_THROW(with_leaky_slope(parse_arch("fc8,leaky,fc2"), 1.0), std::invalid_argument);
}

TEST(ArchLeakySlope, LayerSizesTakeASlopedLeaky) {
  EXPECT_EQ(spec_from_layer_sizes("4,8:leaky0.1,3", "relu", 4, 3), "fc8,leaky0.1,fc3");
  EXPECT_THROW(spec_from_layer_sizes("4,8:leaky2,3", "relu", 4, 3), std::invalid_argument);
  EXPECT_THROW(spec_from_layer_sizes("4,8:fc2,3", "relu", 4, 3), std::invalid_argument);
  // The activation comes out as the spec spells it, so that the spec is canonical (a fuzz finding).
  EXPECT_EQ(spec_from_layer_sizes("4,8:taNh,8:leaky.25,3", "relu", 4, 3), "fc8,tanh,fc8,leaky0.25,fc3");
}

TEST(ArchOutputActivation, SigmoidAfterTheLastDenseLayer) {
  const Arch plain = parse_arch("fc16,leaky,fc8,leaky,fc3");
  EXPECT_FALSE(output_activation(plain).has_value());
  const Arch practice = with_output_activation(plain, "sigmoid");
  EXPECT_EQ(practice.spec(), "fc16,leaky,fc8,leaky,fc3,sigmoid");
  ASSERT_TRUE(output_activation(practice).has_value());
  EXPECT_EQ(*output_activation(practice), Activation::Sigmoid);
  EXPECT_EQ(with_output_activation(plain, "none").spec(), plain.spec());
  EXPECT_THROW(with_output_activation(practice, "sigmoid"), std::invalid_argument) << "one output activation";
  EXPECT_THROW(with_output_activation(plain, "softmax"), std::invalid_argument);
  EXPECT_EQ(output_activation_names(), (std::vector<std::string>{"none", "sigmoid"}));

  // The shapes: the sigmoid keeps the K outputs.
  const auto shapes = layer_shapes(practice, {4, 1, 1}, 3);
  ASSERT_EQ(shapes.size(), 6u);
  EXPECT_EQ(shapes.back(), (Shape3{3, 1, 1}));
  // Only sigmoid, and only right after fc<classes>.
  EXPECT_THROW(layer_shapes(parse_arch("fc8,relu,fc3,relu"), {4, 1, 1}, 3), std::invalid_argument);
  EXPECT_THROW(layer_shapes(parse_arch("fc8,relu,fc4,sigmoid"), {4, 1, 1}, 3), std::invalid_argument);
  EXPECT_THAT(
      testkit::error_of<std::invalid_argument>([] { layer_shapes(parse_arch("fc8,fc3,tanh"), {4, 1, 1}, 3); }),
      HasSubstr("the one output activation is sigmoid"))
      << "tanh after fc3";
}

TEST(ArchOutputActivation, OnlyWithMse) {
  const Arch practice = parse_arch("fc8,relu,fc3,sigmoid");
  EXPECT_NO_THROW(check_output_activation(practice, "mse"));
  // A sigmoid output with cross-entropy is refused.
  const std::string e =
      testkit::error_of<std::invalid_argument>([&] { check_output_activation(practice, "cross-entropy"); });
  EXPECT_THAT(e, HasSubstr("--output sigmoid"));
  EXPECT_THAT(e, HasSubstr("--loss mse"));
  EXPECT_NO_THROW(check_output_activation(parse_arch("fc8,relu,fc3"), "cross-entropy"));
  // A sigmoid between hidden layers is no output activation.
  EXPECT_FALSE(output_activation(parse_arch("fc8,sigmoid,fc3")).has_value());
}
