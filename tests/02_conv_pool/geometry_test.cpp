// The shape arithmetic of conv and pool layers, and their refusals of shapes
// they cannot run (glue, not a task: these pass on both tracks).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "02_conv_pool/conv.hpp"
#include "02_conv_pool/pool.hpp"

using namespace course;

TEST(Stage02_Geometry, OutputSizeIsFloorOfPaddedExtentMinusKernelOverStridePlusOne) {
  EXPECT_EQ((ConvGeometry{1, 28, 28, 16, 3, 1, 1}.out_h()), 28);  // "same" padding
  EXPECT_EQ((ConvGeometry{1, 28, 28, 16, 3, 0, 1}.out_h()), 26);
  EXPECT_EQ((ConvGeometry{1, 7, 8, 1, 3, 1, 2}.out_h()), 4);  // (7 + 2 - 3) / 2 + 1
  EXPECT_EQ((ConvGeometry{1, 7, 8, 1, 3, 1, 2}.out_w()), 4);  // (8 + 2 - 3) / 2 + 1 = 3.5 -> 3, + 1
  EXPECT_EQ((ConvGeometry{1, 9, 6, 1, 3, 0, 3}.out_w()), 2);
  EXPECT_EQ((PoolGeometry{16, 28, 28, 2, 2, 0}.out_h()), 14);
  EXPECT_EQ((PoolGeometry{1, 5, 5, 2, 2, 0}.out_h()), 2);  // the last row belongs to no window
  EXPECT_EQ((PoolGeometry{1, 7, 7, 3, 2, 1}.out_w()), 4);
}

TEST(Stage02_Geometry, RefusesShapesThatCannotRun) {
  auto message = [](auto geometry) {
    try {
      geometry.check();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(message(ConvGeometry{1, 2, 2, 1, 5, 1, 1}).find("larger than the padded input"), std::string::npos);
  EXPECT_NE(message(ConvGeometry{1, 4, 4, 1, 3, 0, 0}).find("at least 1"), std::string::npos);
  EXPECT_NE(message(PoolGeometry{1, 4, 4, 2, 2, 2}).find("smaller than the window"), std::string::npos);
  EXPECT_NE(message(PoolGeometry{1, 1, 4, 3, 1, 0}).find("larger than the padded input"), std::string::npos);
  EXPECT_EQ(message(ConvGeometry{16, 14, 14, 32, 3, 1, 1}), "(accepted)");
  // The lesson functions check before they touch memory.
  float buffer[4] = {};
  EXPECT_THROW(conv2d_forward(buffer, buffer, buffer, buffer, 1, ConvGeometry{1, 1, 1, 1, 3, 0, 1}),
               std::invalid_argument);
}
