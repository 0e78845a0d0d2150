/// @file tensor.hpp
/// @brief A plain tensor: contiguous storage plus a shape, read like a flat array.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace course {

/// Contiguous row-major storage with a shape.
///
/// Image batches are NCHW: element (n, c, h, w) of a [N, C, H, W] tensor sits at
/// `((n * C + c) * H + h) * W + w`. Lesson code takes `ptr()` and indexes it
/// by hand, so that every layout is written out where it is used.
template <typename T>
struct TensorT {
  std::vector<int> shape;  ///< extent of each dimension, outermost first
  std::vector<T> data;     ///< `size()` elements, row-major

  TensorT() = default;
  /// A tensor of the given shape with every element set to `fill`.
  explicit TensorT(std::vector<int> dims, T fill = T(0)) : shape(std::move(dims)) {
    data.assign(count(shape), fill);
  }

  /// Number of elements a shape holds (1 for an empty shape).
  static std::size_t count(const std::vector<int>& dims) {
    std::size_t n = 1;
    for (int d : dims) {
      if (d < 0) throw std::invalid_argument("tensor dimension is negative");
      n *= static_cast<std::size_t>(d);
    }
    return n;
  }
  std::size_t size() const { return data.size(); }
  int dim(std::size_t i) const { return shape.at(i); }
  T* ptr() { return data.data(); }
  const T* ptr() const { return data.data(); }
  T& operator[](std::size_t i) { return data[i]; }
  const T& operator[](std::size_t i) const { return data[i]; }

  /// Changes the shape, keeping or growing the storage (new elements are zero).
  void resize(std::vector<int> dims) {
    shape = std::move(dims);
    data.resize(count(shape));
  }
  /// "[64, 1, 28, 28]"
  std::string shape_str() const { return shape_to_string(shape); }

  static std::string shape_to_string(const std::vector<int>& dims) {
    std::string s = "[";
    for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
    return s + "]";
  }
};

using Tensor = TensorT<float>;  ///< the tensor every trainer uses

/// A tensor with a name, as stored in model files ("conv1.weight").
struct NamedTensor {
  std::string name;
  Tensor tensor;
};

}  // namespace course
