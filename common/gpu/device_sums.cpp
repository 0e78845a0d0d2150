/// @file device_sums.cpp
/// @brief An epoch's sums on the device and the loss slots (see the header).
#include "common/gpu/device_sums.hpp"

#include <stdexcept>

namespace course {

void DeviceSums::allocate() {
  slots_.reset();  // the copies still on their way land first
  loss_sum.resize(1);
  correct.resize(1);
  abs_error_sum.resize(1);
}

void DeviceSums::zero(cudaStream_t stream) {
  CUDA_CHECK(cudaMemsetAsync(loss_sum.get(), 0, sizeof(double), stream));
  CUDA_CHECK(cudaMemsetAsync(correct.get(), 0, sizeof(unsigned long long), stream));
  CUDA_CHECK(cudaMemsetAsync(abs_error_sum.get(), 0, sizeof(double), stream));
}

DeviceLossSlots& DeviceSums::loss_slots(cudaStream_t stream, int count) {
  if (!slots_ || slots_->stream() != stream || slots_->count() != count) {
    slots_.reset();  // the old slots' copies land before their memory goes
    slots_ = std::make_unique<DeviceLossSlots>(stream, count);
  }
  return *slots_;
}

EpochStats DeviceSums::read(long seen, cudaStream_t stream) const {
  EpochStats stats;
  unsigned long long count = 0;
  CUDA_CHECK(cudaMemcpyAsync(&stats.loss_sum, loss_sum.get(), sizeof(double), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaMemcpyAsync(&count, correct.get(), sizeof count, cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(
      cudaMemcpyAsync(&stats.abs_error_sum, abs_error_sum.get(), sizeof(double), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  stats.correct = static_cast<long>(count);
  stats.seen = seen;
  return stats;
}

DeviceLossSlots::DeviceLossSlots(cudaStream_t stream, int count)
    : stream_(stream), events_(static_cast<std::size_t>(count), nullptr) {
  CUDA_CHECK(cudaHostAlloc(&host_, static_cast<std::size_t>(count) * sizeof(double), cudaHostAllocMapped));
  const cudaError_t mapped = cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_), host_, 0);
  if (mapped != cudaSuccess) {
    release();
    throw_gpu_error("cudaHostGetDevicePointer", __FILE__, __LINE__, cudaGetErrorString(mapped));
  }
  for (cudaEvent_t& e : events_) {
    const cudaError_t err = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    if (err != cudaSuccess) {
      release();  // what was made so far
      throw_gpu_error("cudaEventCreateWithFlags", __FILE__, __LINE__, cudaGetErrorString(err));
    }
  }
}

DeviceLossSlots::~DeviceLossSlots() { release(); }

void DeviceLossSlots::release() {
  // A stop may leave copies on their way into host_: they must land before it is freed.
  // Errors are ignored here: after a GPU fault there is nothing left to wait for.
  for (cudaEvent_t e : events_)
    if (e != nullptr) {
      cudaEventSynchronize(e);
      cudaEventDestroy(e);
    }
  events_.clear();
  if (host_ != nullptr) cudaFreeHost(host_);
  host_ = nullptr;
  device_ = nullptr;
}

void DeviceLossSlots::record(int slot) {
  const auto i = static_cast<std::size_t>(slot);
  CUDA_CHECK(cudaEventRecord(events_[i], stream_));
}

double DeviceLossSlots::wait(int slot) {
  const auto i = static_cast<std::size_t>(slot);
  CUDA_CHECK(cudaEventSynchronize(events_[i]));
  return host_[i];
}

}  // namespace course
