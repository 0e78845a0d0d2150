// Architecture spec strings: named models, custom specs, --layers, shapes.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include "common/model/arch.hpp"
#include "error_of.hpp"

using namespace course;
using ::testing::HasSubstr;

TEST(ArchSpec, NamedModelsRoundTrip) {
  for (const auto& name : named_models()) {
    const std::string spec = named_model_spec(name);
    EXPECT_EQ(parse_arch(spec).spec(), spec) << name;
  }
  EXPECT_THROW(named_model_spec("resnet"), std::invalid_argument);
}

TEST(ArchSpec, CnnShapesOnFashionMnist) {
  const auto shapes = layer_shapes(parse_arch(named_model_spec("cnn")), {1, 28, 28}, 10);
  ASSERT_EQ(shapes.size(), 10u);
  EXPECT_EQ(shapes[0], (Shape3{16, 28, 28}));  // conv16k3p1 keeps 28x28
  EXPECT_EQ(shapes[2], (Shape3{16, 14, 14}));  // pool2
  EXPECT_EQ(shapes[5], (Shape3{32, 7, 7}));
  EXPECT_EQ(shapes[6], (Shape3{1568, 1, 1}));  // flatten
  EXPECT_EQ(shapes.back(), (Shape3{10, 1, 1}));
}

TEST(ArchSpec, CnnDeepOnCifarShapes) {
  const auto shapes = layer_shapes(parse_arch(named_model_spec("cnn-deep")), {3, 32, 32}, 10);
  EXPECT_EQ(shapes[8], (Shape3{32, 4, 4}));
}

TEST(ArchSpec, StrideAndPaddingTokens) {
  const Arch a = parse_arch("conv8k5p2s2, relu, pool3s2p1, flatten, fc10");
  EXPECT_EQ(a.layers[0].kernel, 5);
  EXPECT_EQ(a.layers[0].pad, 2);
  EXPECT_EQ(a.layers[0].stride, 2);
  EXPECT_EQ(a.layers[2].stride, 2);
  EXPECT_EQ(a.layers[2].pad, 1);
  EXPECT_EQ(a.spec(), "conv8k5p2s2,relu,pool3s2p1,flatten,fc10");
  // floor((28 + 4 - 5) / 2) + 1 = 14, then floor((14 + 2 - 3) / 2) + 1 = 7
  EXPECT_EQ(layer_shapes(a, {1, 28, 28}, 10)[2], (Shape3{8, 7, 7}));
}

TEST(ArchSpec, BadSpecsNameTheLayer) {
  const char* bad[] = {"", "fc", "fc0", "conv16", "conv16x3", "pool", "pool2p2", "relu,,fc10", "dense10", "fc10k3"};
  for (const char* spec : bad) {
    try {
      parse_arch(spec);
      ADD_FAILURE() << "accepted '" << spec << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), HasSubstr("layer")) << spec;
    }
  }
}

TEST(ArchSpec, ShapeErrors) {
  EXPECT_THROW(layer_shapes(parse_arch("fc256,relu,fc5"), {1, 28, 28}, 10), std::invalid_argument);  // 5 != 10 classes
  EXPECT_THROW(layer_shapes(parse_arch("conv4k31,flatten,fc10"), {1, 28, 28}, 10), std::invalid_argument);
  EXPECT_THAT(testkit::error_of<std::invalid_argument>(
                  [] { layer_shapes(parse_arch("fc20,conv4k3,flatten,fc10"), {1, 28, 28}, 10); }),
              HasSubstr("conv4k3"))
      << "conv after a dense layer";
}

TEST(ArchSpec, LayerSizes) {
  EXPECT_EQ(spec_from_layer_sizes("784,256,128,10", "relu", 784, 10), "fc256,relu,fc128,relu,fc10");
  EXPECT_EQ(spec_from_layer_sizes("784,64:tanh,10", "relu", 784, 10), "fc64,tanh,fc10");
  EXPECT_THROW(spec_from_layer_sizes("100,10", "relu", 784, 10), std::invalid_argument);   // wrong input size
  EXPECT_THROW(spec_from_layer_sizes("784,64,9", "relu", 784, 10), std::invalid_argument);  // wrong classes
  EXPECT_THROW(spec_from_layer_sizes("784,x,10", "relu", 784, 10), std::invalid_argument);
  EXPECT_THROW(spec_from_layer_sizes("784,64:fc3,10", "relu", 784, 10), std::invalid_argument);
  EXPECT_THROW(spec_from_layer_sizes("784", "relu", 784, 10), std::invalid_argument);
}
