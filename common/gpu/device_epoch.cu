/// @file device_epoch.cu
/// @brief The gather that follows the device's step counter, and the step's end: the loss check's copy and the counter's advance (given code).
///
/// The running loss goes to the host through mapped pinned memory, written by a kernel: a
/// cudaMemcpyAsync from the device to the host after every step would do, but each such copy
/// waits for the step before it and holds up the step after it (about 10 us a step on the H100,
/// a tenth of a fused `cnn` step). One thread writing 8 bytes costs about 3 us, and it is the
/// same thread that advances the counter.
#include "common/gpu/cuda_check.hpp"
#include "common/gpu/device_epoch.hpp"

namespace course {

namespace {

constexpr int kGatherThreads = 256;

/// One thread per value of x [B, D]; the batch's rows of `order` start at *step * batch.
/// Neighbouring threads take neighbouring d, so the reads of an image row and the writes are coalesced.
__global__ void gather_batch_at_device_step_kernel(const float* images, const int* labels, const int* order,
                                                   const int* step, int batch, int B, long D, float* x, int* y) {
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<long>(B) * D) return;
  const long r = i / D, d = i % D;
  const long example = order[static_cast<long>(*step) * batch + r];
  x[i] = images[example * D + d];
  if (d == 0) y[r] = labels[example];
}

__global__ void end_training_step_kernel(int* step, const double* loss_sum, double* slots, int count) {
  const int s = *step;
  if (slots != nullptr) {
    slots[s % count] = *loss_sum;
    __threadfence_system();  // the host sees the value once it sees the kernel finished
  }
  *step = s + 1;
}

}  // namespace

void gather_batch_at_device_step(const float* images, const int* labels, const int* order, const int* step,
                                 int batch, int B, long D, float* x, int* y, cudaStream_t stream) {
  const long n = static_cast<long>(B) * D;
  const auto blocks = static_cast<unsigned int>(n > 0 ? (n + kGatherThreads - 1) / kGatherThreads : 1);
  gather_batch_at_device_step_kernel<<<blocks, kGatherThreads, 0, stream>>>(images, labels, order, step, batch, B, D,
                                                                            x, y);
  CUDA_CHECK_LAUNCH();
}

void end_training_step_gpu(int* step, const double* loss_sum, double* slots, int count, cudaStream_t stream) {
  end_training_step_kernel<<<1, 1, 0, stream>>>(step, loss_sum, slots, count);
  CUDA_CHECK_LAUNCH();
}

}  // namespace course
