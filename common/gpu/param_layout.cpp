/// @file param_layout.cpp
/// @brief The parameters between named tensors and one flat buffer (see the header).
#include "common/gpu/param_layout.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace course {

std::vector<float> ParamLayout::flatten_checked(const std::vector<NamedTensor>& tensors,
                                                const std::string& suffix) const {
  if (tensors.size() != names.size())
    throw std::invalid_argument("expected " + std::to_string(names.size()) + " tensors, got " +
                                std::to_string(tensors.size()));
  std::vector<float> flat;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::string name = names[i] + suffix;
    const Tensor& t = tensors[i].tensor;
    if (tensors[i].name != name || t.shape != shapes[i] || t.data.size() != Tensor::count(t.shape))
      throw std::invalid_argument("tensor " + std::to_string(i) + " is " + tensors[i].name + " " + t.shape_str() +
                                  ", expected " + name + " " + Tensor::shape_to_string(shapes[i]));
    flat.insert(flat.end(), t.data.begin(), t.data.end());
  }
  return flat;
}

std::vector<NamedTensor> ParamLayout::split(const std::vector<float>& flat, const std::string& suffix) const {
  std::vector<NamedTensor> out;
  std::size_t offset = 0;
  for (std::size_t i = 0; i < names.size(); ++i) {
    Tensor t(shapes[i]);
    std::copy(flat.begin() + static_cast<long>(offset), flat.begin() + static_cast<long>(offset + t.size()),
              t.data.begin());
    offset += t.size();
    out.push_back({names[i] + suffix, std::move(t)});
  }
  return out;
}

std::size_t ParamLayout::total() const {
  std::size_t n = 0;
  for (const std::vector<int>& s : shapes) n += Tensor::count(s);
  return n;
}

}  // namespace course
