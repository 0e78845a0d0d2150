/// @file param_chunks.hpp
/// @brief Stage 03: the parameters cut into chunks, the work items of a parallel reduction (glue).
///
/// A model's parameters are tensors of very different sizes (a bias of 16
/// values, a weight of 156,800). Splitting each tensor over the threads would
/// give every thread a few values of each bias, all in one cache line (false
/// sharing), and one barrier per tensor. Instead the tensors are cut into
/// chunks of at most `chunk` values, and one parallel loop hands whole chunks
/// to threads: a thread writes only its own chunks, and two threads share a
/// cache line at most at a chunk boundary.
#pragma once

#include <algorithm>
#include <vector>

#include "01_fc_softmax/network.hpp"

namespace course {

/// Values [begin, end) of parameter tensor `param` (an index into a params() list).
struct ParamChunk {
  int param = 0;
  long begin = 0, end = 0;
};

/// Default chunk length: 4 KiB of floats, a multiple of the 64-byte cache line.
constexpr long kParamChunk = 1024;

/// The chunks of every tensor of `params`, in order; each at most `chunk` values.
template <typename T>
std::vector<ParamChunk> param_chunks(const std::vector<Param<T>*>& params, long chunk = kParamChunk) {
  std::vector<ParamChunk> out;
  for (std::size_t p = 0; p < params.size(); ++p) {
    const long n = static_cast<long>(params[p]->value.size());
    for (long begin = 0; begin < n; begin += chunk)
      out.push_back({static_cast<int>(p), begin, std::min(n, begin + chunk)});
  }
  return out;
}

/// Copies every parameter value of `from` into `to` (same model): a replica pulls the weights.
template <typename T>
void copy_weights(const std::vector<Param<T>*>& from, const std::vector<Param<T>*>& to) {
  for (std::size_t p = 0; p < from.size(); ++p) std::copy(from[p]->value.data.begin(), from[p]->value.data.end(), to[p]->value.data.begin());
}

}  // namespace course
