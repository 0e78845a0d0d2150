/// @file gpu_engine_parts.cpp
/// @brief Stage 04: the pieces every GPU engine shares (glue, not a task; see the header).
#include "04_cuda_matmul/gpu_engine_parts.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace course {

namespace {

// Mixes one 32-bit word into a 64-bit hash (a multiply-xorshift step).
std::uint64_t mix(std::uint64_t h, std::uint32_t word) {
  h = (h ^ word) * 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 29);
}

std::uint32_t bits_of(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

}  // namespace

std::uint64_t dataset_fingerprint(const Dataset& d) {
  const int n = d.size();
  const long D = d.shape.size();
  std::uint64_t h = mix(mix(0, static_cast<std::uint32_t>(n)), static_cast<std::uint32_t>(D));
  for (int y : d.labels) h = mix(h, static_cast<std::uint32_t>(y));
  if (n == 0) return h;
  for (long j = 0; j < D; ++j) h = mix(mix(h, bits_of(d.image(0)[j])), bits_of(d.image(n - 1)[j]));
  // One run of consecutive values an image, not values spread over it: each GPU epoch
  // computes this while the GPU waits, and a spread sample touches a cache line per value.
  const int images = std::min(n, 4096);
  const long run = std::min(D, kFingerprintRun);
  for (int s = 0; s < images; ++s) {
    const float* image = d.image(static_cast<int>(static_cast<long>(s) * n / images));
    const long first = static_cast<long>(s) * run % (D - run + 1);  // the run moves along the images
    for (long j = first; j < first + run; ++j) h = mix(h, bits_of(image[j]));
  }
  return h;
}

const DeviceDataset& upload_once(const Dataset& data, Shape3 input, int classes, DeviceDataset& slot,
                                 cudaStream_t stream) {
  if (data.shape.size() != input.size())
    throw std::invalid_argument("data set '" + data.name + "' has examples of " + data.shape.str() +
                                " but the model was built for " + input.str());
  if (data.images.size() != static_cast<std::size_t>(data.size()) * static_cast<std::size_t>(data.shape.size()))
    throw std::invalid_argument("data set '" + data.name + "' holds " + std::to_string(data.images.size()) +
                                " values for " + std::to_string(data.size()) + " examples of " + data.shape.str());
  const std::uint64_t fp = dataset_fingerprint(data);
  if (slot.size == data.size() && slot.fingerprint == fp) return slot;
  for (int i = 0; i < data.size(); ++i) {
    const int y = data.labels[static_cast<std::size_t>(i)];
    if (y < 0 || y >= classes)
      throw std::invalid_argument("data set '" + data.name + "': label " + std::to_string(y) + " of example " +
                                  std::to_string(i) + " is outside [0, " + std::to_string(classes) + ")");
  }
  slot.size = -1;  // until the upload has succeeded
  CUDA_CHECK(cudaStreamSynchronize(stream));  // queued steps may still read the old copy
  if (data.size() > 0) {
    slot.images.upload(data.images);
    slot.labels.upload(data.labels);
  }
  slot.size = data.size();
  slot.fingerprint = fp;
  return slot;
}

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

GpuProfiler::~GpuProfiler() {
  for (Section& s : sections_) {
    if (s.start) cudaEventDestroy(s.start);
    if (s.stop) cudaEventDestroy(s.stop);
  }
}

std::size_t GpuProfiler::add_row(const std::string& name) {
  if (!sections_.empty()) throw std::logic_error("GpuProfiler::add_row after enable()");
  times_.push_back({name, 0, 0, 0});
  return times_.size() - 1;
}

void GpuProfiler::enable() {
  sections_.resize(2 * times_.size());
  for (Section& s : sections_) {
    CUDA_CHECK(cudaEventCreate(&s.start));
    CUDA_CHECK(cudaEventCreate(&s.stop));
  }
}

void GpuProfiler::collect() {
  std::vector<bool> touched(times_.size(), false);
  for (std::size_t i = 0; i < sections_.size(); ++i) {
    Section& s = sections_[i];
    if (!s.pending) continue;
    CUDA_CHECK(cudaEventSynchronize(s.stop));
    float ms = 0.f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, s.start, s.stop));
    LayerTime& t = times_[i / 2];
    (i % 2 == 0 ? t.forward_ms : t.backward_ms) += ms;
    touched[i / 2] = true;
    s.pending = false;
  }
  for (std::size_t r = 0; r < times_.size(); ++r)
    if (touched[r]) ++times_[r].calls;
}

void GpuProfiler::reset() {
  for (LayerTime& t : times_) {
    t.forward_ms = t.backward_ms = 0;
    t.calls = 0;
  }
}

void DeviceSums::allocate() {
  slots_.reset();  // they copy from the loss_sum that is about to go
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
    slots_ = std::make_unique<DeviceLossSlots>(loss_sum.get(), stream, count);
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

DeviceLossSlots::DeviceLossSlots(const double* loss_sum, cudaStream_t stream, int count)
    : loss_sum_(loss_sum), stream_(stream), events_(static_cast<std::size_t>(count), nullptr) {
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
  if (!copied_by_the_step_) copy_running_loss_gpu(loss_sum_, device_ + i, stream_);
  CUDA_CHECK(cudaEventRecord(events_[i], stream_));
}

double DeviceLossSlots::wait(int slot) {
  const auto i = static_cast<std::size_t>(slot);
  CUDA_CHECK(cudaEventSynchronize(events_[i]));
  return host_[i];
}

}  // namespace course
