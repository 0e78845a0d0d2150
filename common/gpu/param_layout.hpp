/// @file param_layout.hpp
/// @brief The parameters' names and shapes in model order, between named tensors and one flat buffer (given code).
#pragma once

#include <string>
#include <vector>

#include "common/core/tensor.hpp"

namespace course {

/// The parameters' names ("conv1.weight", ...) and shapes, in model order.
struct ParamLayout {
  std::vector<std::string> names;
  std::vector<std::vector<int>> shapes;

  /// The tensors' values, flat in model order, after checking that tensor i is
  /// names[i] + suffix with shapes[i] (std::invalid_argument naming the first that is not).
  std::vector<float> flatten_checked(const std::vector<NamedTensor>& tensors, const std::string& suffix) const;
  /// The inverse: `flat` cut into named tensors, names[i] + suffix.
  std::vector<NamedTensor> split(const std::vector<float>& flat, const std::string& suffix) const;
  /// Values of every tensor together: the length of the flat buffer.
  std::size_t total() const;
};

}  // namespace course
