/// @file conv_gpu.hpp
/// @brief Stage 05: the conv layer on the GPU as im2col plus GEMMs on stage 04's matmul, forward and backward.
///
/// Layouts are stage 02's (conv.hpp), NCHW, all device memory:
///
///     x, dx [B, C_in, H, W]    W, dW [C_out, C_in, K, K] = the matrix [C_out, R]    b, db [C_out]
///     y, dy [B, C_out, Ho, Wo]                        P = Ho * Wo pixels, R = C_in*K*K taps per patch
///
/// With U = im2col(x) (im2col.hpp: one row per output pixel, one column per tap),
/// the three products of a conv layer are GEMMs:
///
///     forward        y  = W U^T + b          [C_out, P] per image       (each pixel: its patch . each filter)
///     input grad     dU = dy^T W, dx = col2im(dU)   [P, R] per image    (each patch's gradient, summed back into x)
///     weight grad    dW = dy U                [C_out, R], summed over the batch
///     bias grad      db[co] = sum of dy[n][co][.][.] over n and the pixels (a reduction, no GEMM)
///
/// Two ways to unroll (Unroll), the memory lesson of this stage:
///
/// - Unroll::Image: one image at a time into a workspace of P * R floats that is
///   reused for every image: y[n] = W U_n^T lands in NCHW directly; the weight
///   gradient accumulates dW += dy[n] U_n image by image (beta = 1 after the
///   first). Little memory, but B small GEMMs (and B im2col launches) per product.
/// - Unroll::Batch: the whole batch at once, U [B*P, R]: one big GEMM per product.
///   Its result is pixel-major, Ypix [B*P, C_out] = U W^T, so a reorder kernel
///   moves it to NCHW (adding the bias on the way), and dy is reordered to
///   dYpix [B*P, C_out] before the backward products. B times the workspace.
///   The weight gradient dW = dYpix^T U sums over B*P rows: split-K (split_k.hpp).
///
/// conv_workspace_floats() says how much workspace a batch needs. The workspace
/// is scratch: nothing in it survives from one call to the next, so one buffer
/// serves every conv layer of a network (the layers run one after another),
/// and the backward pass runs im2col again rather than keeping U from the
/// forward pass (which would need one U per layer for the whole step).
#pragma once

#include <cstddef>
#include <string>

#include <cuda_runtime.h>

#include "02_conv_pool/conv.hpp"
#include "04_cuda_matmul/gemm.hpp"
#include "05_im2col_gemm/split_k.hpp"

namespace course {

/// How much of the input is unrolled at once.
enum class Unroll {
  Image,  ///< one image at a time, into a reused workspace of Ho*Wo x C_in*K*K floats
  Batch,  ///< the whole batch at once: B times the memory, one big GEMM per product
};

/// "image" or "batch".
const char* unroll_name(Unroll u);

/// Unroll::Image for "image", Unroll::Batch for "batch"; throws std::invalid_argument otherwise.
Unroll parse_unroll(const std::string& name);

/// How a conv layer runs: which GEMM, which unroll, which scratch memory, which stream.
struct ConvContext {
  int gemm_kernel = kBestGemm;     ///< stage 04's kernel number (gemm.hpp; 0 = cuBLAS)
  Unroll unroll = Unroll::Batch;
  float* workspace = nullptr;      ///< device scratch of workspace_floats floats
  std::size_t workspace_floats = 0;
  SplitKGemm* split_k = nullptr;   ///< runs the batch weight gradient in chunks; null: one GEMM
  cudaStream_t stream = 0;
};

/// Where the pieces of the workspace sit, in floats from its start.
struct ConvWorkspaceLayout {
  std::size_t unrolled = 0;  ///< U or dU: P*R (Image) or B*P*R (Batch) floats, at offset 0
  std::size_t pixels = 0;    ///< Batch: Ypix / dYpix, B*P*C_out floats, right after U
  std::size_t partials = 0;  ///< Batch with split-K: chunks*C_out*R floats, after the pixels
  std::size_t total() const { return unrolled + pixels + partials; }
};

/// The workspace the conv functions need for batches of up to B images, with
/// split_chunks split-K chunks (split_k_chunks(); 1 = no split).
ConvWorkspaceLayout conv_workspace_layout(Unroll unroll, int B, const ConvGeometry& g, int split_chunks = 1);

/// The split-K chunks the batch weight gradient of ctx uses for a batch of B (1 when
/// the unroll is Image, there is no SplitKGemm, or the GEMM is cuBLAS).
int conv_split_chunks(const ConvContext& ctx, int B, const ConvGeometry& g);

/// Floats of workspace ctx needs for batches of up to B: conv_workspace_layout(...).total().
std::size_t conv_workspace_floats(const ConvContext& ctx, int B, const ConvGeometry& g);

/// Forward: y = conv(x, W) + b (stage 02's conv2d_forward, on the device). Asynchronous on ctx.stream.
/// Throws std::invalid_argument for a bad geometry, a null pointer or a workspace
/// smaller than conv_workspace_floats(ctx, B, g).
void conv_forward_gpu(const ConvContext& ctx, const float* x, const float* W, const float* b, float* y, int B,
                      const ConvGeometry& g);

/// Input gradient: dx = col2im(dy^T W) (stage 02's conv2d_backward_input). dx is overwritten.
void conv_backward_input_gpu(const ConvContext& ctx, const float* dy, const float* W, float* dx, int B,
                             const ConvGeometry& g);

/// Weight gradient: dW = sum over the batch of dy U (stage 02's conv2d_backward_weight, dW part).
/// dW is overwritten, not accumulated into.
void conv_backward_weight_gpu(const ConvContext& ctx, const float* x, const float* dy, float* dW, int B,
                              const ConvGeometry& g);

/// Bias gradient: db[co] = sum over n, oh, ow of dy[n][co][oh][ow] (stage 02's db). db is overwritten.
void conv_backward_bias_gpu(const float* dy, float* db, int B, const ConvGeometry& g, cudaStream_t stream = 0);

}  // namespace course
