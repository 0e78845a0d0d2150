// How far a GPU average pool may be from stage 02's (Task 2.8) on the same float inputs: the
// bound the average-pool tests derive, K*K * FLT_EPSILON times the largest |value| of the
// pass's input (x forward, dy backward).
#pragma once

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <vector>

#include "02_conv_pool/pool.hpp"

namespace course::testkit {

/// K*K * FLT_EPSILON * max|v|, for pool g whose pass reads v (float or double values).
template <typename T>
double avgpool_atol(const PoolGeometry& g, const std::vector<T>& v) {
  double m = 0;
  for (const T x : v) m = std::max(m, std::fabs(static_cast<double>(x)));
  return static_cast<double>(g.K * g.K) * FLT_EPSILON * m;
}

}  // namespace course::testkit
