/// @file device_epoch.cpp
/// @brief The epoch whose batches the device gathers (see the header).
#include "common/gpu/device_epoch.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace course {

void DeviceEpoch::allocate() {
  step_.resize(1);
  CUDA_CHECK(cudaMemset(step_.get(), 0, sizeof(int)));
}

void DeviceEpoch::begin(const Dataset& train, const std::vector<int>& order, Shape3 input, int classes,
                        DeviceSums& sums, cudaStream_t stream) {
  for (int e : order)
    if (e < 0 || e >= train.size())
      throw std::invalid_argument("an epoch's order: example " + std::to_string(e) + " is outside the " +
                                  std::to_string(train.size()) + " examples of '" + train.name + "'");
  data_ = &upload_once(train, input, classes, train_, stream);
  size_ = static_cast<int>(order.size());
  next_ = 0;
  if (size_ > 0) {
    CUDA_CHECK(cudaStreamSynchronize(stream));  // the last epoch's steps may still read the old order
    order_.upload(order);                       // same size, same buffer: a captured step stays valid
  }
  CUDA_CHECK(cudaMemsetAsync(step_.get(), 0, sizeof(int), stream));
  sums.zero(stream);
}

int DeviceEpoch::batch_size(int b, int batch, const std::string& caller) const {
  if (data_ == nullptr) throw std::logic_error(caller + " before begin_epoch");
  if (b != next_)
    throw std::logic_error(caller + "(" + std::to_string(b) +
                           "): the batches of an epoch run in order (the step counter is on the device); next is " +
                           std::to_string(next_) + " of " + std::to_string(num_batches(batch)));
  return std::min(batch, size_ - b * batch);
}

}  // namespace course
