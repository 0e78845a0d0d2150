// The max-pool shapes of stage 02's gradient checks (tests/02_conv_pool/
// task2_5_maxpool_backward_test.cpp), plus pool1 of `cnn` at a real batch.
#pragma once

#include <string>
#include <vector>

#include "02_conv_pool/pool.hpp"
#include "common/check/mismatch.hpp"

namespace course::s05test {

struct PoolCase {
  int B;
  PoolGeometry g;
  std::string describe() const { return "batch " + std::to_string(B) + ", " + g.str(); }
};

inline std::vector<PoolCase> pool_cases() {
  //        B  C  H  W  K  S  P
  return {{2, {3, 6, 8, 2, 2, 0}},     // window 2, stride 2
          {2, {2, 7, 5, 2, 2, 0}},     // odd size: the last row and column belong to no window
          {2, {2, 9, 7, 3, 2, 0}},     // overlapping windows
          {3, {2, 7, 8, 3, 2, 1}},     // overlapping and padded
          {2, {2, 5, 6, 2, 2, 1}},     // padded
          {1, {2, 6, 5, 3, 1, 1}},     // stride 1: a cell in up to 9 windows
          {8, {16, 28, 28, 2, 2, 0}}}; // pool1 of cnn
}

/// y and its arg-maxes [n, c, h, w]; x and dx [n, c, h, w].
inline TensorShape pool_output_shape(const PoolCase& c) {
  return {{"n", c.B}, {"c", c.g.C}, {"h", c.g.out_h()}, {"w", c.g.out_w()}};
}
inline TensorShape pool_input_shape(const PoolCase& c) {
  return {{"n", c.B}, {"c", c.g.C}, {"h", c.g.H}, {"w", c.g.W}};
}

}  // namespace course::s05test
