// The shapes of a conv layer's tensors, their axes named, for the failure messages of the
// GPU conv tests (testkit::tensor_matches() and the stages' comparisons print them).
#pragma once

#include "02_conv_pool/conv.hpp"
#include "common/check/mismatch.hpp"

namespace course::testkit {

/// x and dx [n, c, h, w] of a conv layer at batch size B.
inline TensorShape input_shape(int B, const ConvGeometry& g) {
  return {{"n", B}, {"c", g.C_in}, {"h", g.H}, {"w", g.W}};
}
/// y and dy [n, c, h, w] (c the output channel).
inline TensorShape output_shape(int B, const ConvGeometry& g) {
  return {{"n", B}, {"c", g.C_out}, {"h", g.out_h()}, {"w", g.out_w()}};
}
/// W and dW [o, c, kh, kw].
inline TensorShape weight_shape(const ConvGeometry& g) {
  return {{"o", g.C_out}, {"c", g.C_in}, {"kh", g.K}, {"kw", g.K}};
}
/// b and db [o].
inline TensorShape bias_shape(const ConvGeometry& g) { return {{"o", g.C_out}}; }

}  // namespace course::testkit
