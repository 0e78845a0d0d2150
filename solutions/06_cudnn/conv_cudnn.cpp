/// @file conv_cudnn.cpp
/// @brief Stage 06 (Tasks 6.4, 6.5): cudnnConvolutionForward + cudnnAddTensor, and the three backward calls.
#include "06_cudnn/conv_cudnn.hpp"

#include <stdexcept>
#include <string>

#include "06_cudnn/bias_gradient.hpp"
#include "common/gpu/cudnn_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

namespace {

void check_workspace(const Workspace& ws, std::size_t needed, const char* what) {
  if (ws.bytes < needed || (needed > 0 && ws.ptr == nullptr))
    throw std::invalid_argument(std::string(what) + " needs a workspace of " + std::to_string(needed) +
                                " bytes, but was given " + std::to_string(ws.bytes) + " bytes at " +
                                (ws.ptr ? "a device address" : "null"));
}

}  // namespace

void conv_forward_cudnn(const GpuHandles& h, const ConvDescriptors& d, const ConvAlgorithms& a, Workspace ws,
                        const float* x, const float* W, const float* b, float* y) {
  check_workspace(ws, a.forward_bytes, ("forward algorithm " + algorithm_name(a.forward)).c_str());
  // BEGIN Task 6.4: y = conv(x, W) with cudnnConvolutionForward (algorithm a.forward, the workspace), then add the bias b to every (n, oh, ow) with cudnnAddTensor
  // HINT: alpha and beta are host pointers to floats: alpha = 1, beta = 0 for the convolution (overwrite y), beta = 1 for the bias (add to y).
  // HINT: cudnnAddTensor(h.cudnn, &one, d.bias, b, &one, d.y, y) broadcasts b [1, C_out, 1, 1] over y [B, C_out, Ho, Wo].
  const float one = 1.f, zero = 0.f;
  CUDNN_CHECK(cudnnConvolutionForward(h.cudnn, &one, d.x, x, d.w, W, d.conv, a.forward, ws.ptr, ws.bytes, &zero, d.y,
                                      y));
  CUDNN_CHECK(cudnnAddTensor(h.cudnn, &one, d.bias, b, &one, d.y, y));
  // END Task 6.4
}

void conv_backward_cudnn(const GpuHandles& h, const ConvDescriptors& d, const ConvAlgorithms& a, Workspace ws,
                         const float* x, const float* W, const float* dy, float* dW, float* db, float* dx) {
  check_workspace(ws, a.backward_filter_bytes, ("backward-filter algorithm " + algorithm_name(a.backward_filter)).c_str());
  if (dx != nullptr)
    check_workspace(ws, a.backward_data_bytes, ("backward-data algorithm " + algorithm_name(a.backward_data)).c_str());
  // BEGIN Task 6.5: dW with cudnnConvolutionBackwardFilter, db with bias_gradient_gpu, and (only when dx is not null) dx with cudnnConvolutionBackwardData; all overwrite (beta = 0)
  // HINT: backward filter reads x (d.x) and dy (d.y) and writes dW (d.w); backward data reads W (d.w) and dy (d.y) and writes dx (d.x).
  // HINT: bias_gradient_gpu(h, d.y, dy, db) sums dy over n, oh and ow (bias_gradient.hpp says why not cudnnConvolutionBackwardBias).
  const float one = 1.f, zero = 0.f;
  CUDNN_CHECK(cudnnConvolutionBackwardFilter(h.cudnn, &one, d.x, x, d.y, dy, d.conv, a.backward_filter, ws.ptr, ws.bytes,
                                             &zero, d.w, dW));
  bias_gradient_gpu(h, d.y, dy, db);
  if (dx != nullptr)  // the first layer's input gradient is never used: skip its cost
    CUDNN_CHECK(cudnnConvolutionBackwardData(h.cudnn, &one, d.w, W, d.y, dy, d.conv, a.backward_data, ws.ptr, ws.bytes,
                                             &zero, d.x, dx));
  // END Task 6.5
}

}  // namespace course
