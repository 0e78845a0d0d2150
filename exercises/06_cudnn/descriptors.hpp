/// @file descriptors.hpp
/// @brief Stage 06 (Task 6.2): telling cuDNN what the tensors, filters, convolutions and pools look like.
///
/// cuDNN never sees our structs. A call takes raw device pointers plus a
/// *descriptor* for each: a small host-side object that says how to read the
/// bytes behind the pointer. A tensor descriptor holds the data type, four
/// sizes (N, C, H, W) and four strides; with CUDNN_TENSOR_NCHW the strides are
/// those of the packed layout every stage of this course uses:
///
///     element (n, c, h, w) of [N, C, H, W] sits at  n*(C*H*W) + c*(H*W) + h*W + w
///     strides:                                      C*H*W      H*W      W    1
///
/// Worked example: the first conv layer of `cnn` at batch 64 reads x as
/// [64, 1, 28, 28] (strides 784, 784, 28, 1) and writes y as [64, 16, 28, 28]
/// (strides 12544, 784, 28, 1); element (n=2, c=5, h=3, w=7) of y is
/// y[2*12544 + 5*784 + 3*28 + 7] = y[29099].
///
/// A filter descriptor says the same of the weights [C_out, C_in, K, K], and a
/// convolution descriptor holds the padding, the stride, the dilation (1: the
/// taps are neighbours) and the *mode*. Stage 02's forward pass
///
///     y[n][co][oh][ow] = b[co] + sum_{ci,kh,kw} W[co][ci][kh][kw] x[n][ci][oh*S-P+kh][ow*S-P+kw]
///
/// slides the filter over the image unflipped: a cross-correlation, which is
/// CUDNN_CROSS_CORRELATION. CUDNN_CONVOLUTION would flip the filter in both
/// axes first (W[co][ci][K-1-kh][K-1-kw]), the convolution of signal
/// processing; it learns as well, but its weights would be stage 02's flipped,
/// and a model file could no longer move between stages.
///
/// The descriptor objects are made and destroyed by small owning classes
/// (glue); Task 6.2 fills them in.
#pragma once

#include <string>

#include <cudnn.h>

#include <utility>

#include "02_conv_pool/conv.hpp"
#include "02_conv_pool/pool.hpp"
#include "common/gpu/cuda_check.hpp"

namespace course {

/// One cuDNN descriptor object: created with the owner, destroyed with it. Not
/// copyable, movable. `Traits` names the cuDNN type and its create and destroy calls.
template <typename Traits>
class CudnnDescriptor {
 public:
  using Handle = typename Traits::Handle;
  CudnnDescriptor() {
    const cudnnStatus_t s = Traits::create(&d_);
    if (s != CUDNN_STATUS_SUCCESS) throw_gpu_error(Traits::create_name, __FILE__, __LINE__, cudnnGetErrorString(s));
  }
  ~CudnnDescriptor() {
    if (d_) Traits::destroy(d_);
  }
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;
  CudnnDescriptor(CudnnDescriptor&& o) noexcept : d_(std::exchange(o.d_, nullptr)) {}
  CudnnDescriptor& operator=(CudnnDescriptor&& o) noexcept {
    std::swap(d_, o.d_);
    return *this;
  }
  /// The raw descriptor every cuDNN call takes.
  Handle get() const { return d_; }
  operator Handle() const { return d_; }  // NOLINT: pass it straight to cuDNN

 private:
  Handle d_ = nullptr;
};

struct TensorDescriptorTraits {
  using Handle = cudnnTensorDescriptor_t;
  static constexpr const char* create_name = "cudnnCreateTensorDescriptor";
  static cudnnStatus_t create(Handle* d) { return cudnnCreateTensorDescriptor(d); }
  static void destroy(Handle d) { cudnnDestroyTensorDescriptor(d); }
};
struct FilterDescriptorTraits {
  using Handle = cudnnFilterDescriptor_t;
  static constexpr const char* create_name = "cudnnCreateFilterDescriptor";
  static cudnnStatus_t create(Handle* d) { return cudnnCreateFilterDescriptor(d); }
  static void destroy(Handle d) { cudnnDestroyFilterDescriptor(d); }
};
struct ConvolutionDescriptorTraits {
  using Handle = cudnnConvolutionDescriptor_t;
  static constexpr const char* create_name = "cudnnCreateConvolutionDescriptor";
  static cudnnStatus_t create(Handle* d) { return cudnnCreateConvolutionDescriptor(d); }
  static void destroy(Handle d) { cudnnDestroyConvolutionDescriptor(d); }
};
struct PoolingDescriptorTraits {
  using Handle = cudnnPoolingDescriptor_t;
  static constexpr const char* create_name = "cudnnCreatePoolingDescriptor";
  static cudnnStatus_t create(Handle* d) { return cudnnCreatePoolingDescriptor(d); }
  static void destroy(Handle d) { cudnnDestroyPoolingDescriptor(d); }
};
struct ActivationDescriptorTraits {
  using Handle = cudnnActivationDescriptor_t;
  static constexpr const char* create_name = "cudnnCreateActivationDescriptor";
  static cudnnStatus_t create(Handle* d) { return cudnnCreateActivationDescriptor(d); }
  static void destroy(Handle d) { cudnnDestroyActivationDescriptor(d); }
};

using TensorDescriptor = CudnnDescriptor<TensorDescriptorTraits>;
using FilterDescriptor = CudnnDescriptor<FilterDescriptorTraits>;
using ConvolutionDescriptor = CudnnDescriptor<ConvolutionDescriptorTraits>;
using PoolingDescriptor = CudnnDescriptor<PoolingDescriptorTraits>;
using ActivationDescriptor = CudnnDescriptor<ActivationDescriptorTraits>;

/// Everything cuDNN needs to know about one conv layer at one batch size B.
struct ConvDescriptors {
  TensorDescriptor x;          ///< input  [B, C_in, H, W]
  TensorDescriptor y;          ///< output [B, C_out, Ho, Wo]
  TensorDescriptor bias;       ///< bias   [1, C_out, 1, 1]: one value per channel, broadcast over n, h, w
  FilterDescriptor w;          ///< weights [C_out, C_in, K, K]
  ConvolutionDescriptor conv;  ///< padding P, stride S, dilation 1, cross-correlation, FP32 (FMA) math
};

/// Everything cuDNN needs to know about one max-pool layer at one batch size B.
struct PoolDescriptors {
  TensorDescriptor x;        ///< input  [B, C, H, W]
  TensorDescriptor y;        ///< output [B, C, Ho, Wo]
  PoolingDescriptor pool;    ///< K x K window, padding P, stride S, deterministic max
};

/// Describes a packed NCHW float tensor [n, c, h, w] (layout at the top of this file).
/// Throws course::GpuError when cuDNN refuses the sizes.
void set_nchw(cudnnTensorDescriptor_t desc, int n, int c, int h, int w);

/// Fills every descriptor of `d` for conv layer `g` at batch size B, then checks
/// that cuDNN's own output size (cudnnGetConvolution2dForwardOutputDim) is
/// stage 02's Ho x Wo, throwing std::logic_error naming both if not.
void describe_conv(ConvDescriptors& d, const ConvGeometry& g, int B);

/// Fills every descriptor of `d` for max-pool layer `g` at batch size B, and
/// checks cuDNN's output size (cudnnGetPooling2dForwardOutputDim) likewise.
void describe_pool(PoolDescriptors& d, const PoolGeometry& g, int B);

/// The check at the end of describe_pool() and describe_avgpool() (given code): cuDNN's output size for
/// d.pool on d.x must be stage 02's [B, C, Ho, Wo]; if not, throws std::logic_error naming `call`
/// ("describe_pool"), the layer (`layer`, g.str()'s text) and both sizes.
void check_pool_output(const PoolDescriptors& d, const PoolGeometry& g, int B, const std::string& call,
                       const std::string& layer);

}  // namespace course
