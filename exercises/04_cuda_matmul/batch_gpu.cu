/// @file batch_gpu.cu
/// @brief Stage 04 (Task 4.10): the minibatch gather, done on the device.
///
/// The whole training set is uploaded once. Each epoch the host uploads only
/// the shuffled order of the examples (course::epoch_order, 4 bytes an
/// example), and each batch is gathered on the device: row r of the batch is
/// example order[r]. The host never touches an image during training.
#include "04_cuda_matmul/mlp_kernels.hpp"
#include "common/cuda_check.hpp"
#include "common/not_implemented.hpp"

namespace course {

/// One thread per value of the batch: x[r][d] = images[order[r]][d]; the threads with d == 0 also copy the label.
__global__ void gather_batch_kernel(const float* images, const int* labels, const int* order, int B, long D, float* x,
                                    int* y) {
  // TODO(Task 4.10): one thread per value of x [B, D]: x[r][d] = images[order[r]][d], and y[r] = labels[order[r]] once per row
  // HINT: neighbouring threads take neighbouring d, so both the read of an image row and the write of x are coalesced.
}

void gather_batch_gpu(const float* images, const int* labels, const int* order, int B, long D, float* x, int* y,
                      cudaStream_t stream) {
  // TODO(Task 4.10): launch gather_batch_kernel with one thread per value of the batch
  throw course::NotImplemented("Task 4.10", "04_cuda_matmul/batch_gpu.cu", "docs/lessons/04_cuda_matmul.md");
}

}  // namespace course
