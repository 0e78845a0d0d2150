/// @file im2col.hpp
/// @brief Stage 05: im2col, which turns a convolution into a matrix product, and col2im, its adjoint.
///
/// A convolution output is a dot product of one filter with one receptive field
/// (a patch of C_in x K x K input values). im2col copies every patch into a row
/// of a matrix, the unrolled input U:
///
///     x   [B, C_in, H, W]          the input batch (NCHW, stage 02's layout)
///     U   [B * Ho * Wo, C_in*K*K]  one row per output pixel (n, oh, ow), one column per tap (ci, kh, kw)
///
///     U[(n*Ho + oh)*Wo + ow][(ci*K + kh)*K + kw] = x[n][ci][oh*S - P + kh][ow*S - P + kw]   (0 on padding)
///
/// A row of U is read in the order of a filter W[co] = W[co][ci][kh][kw], so
/// with W viewed as the matrix [C_out, C_in*K*K] the whole convolution is one
/// GEMM: out[pixel][co] = sum_r U[pixel][r] * W[co][r], i.e. Y = U W^T. For a
/// single image, U^T is the matrix [C_in*K*K, Ho*Wo] of the textbook formula
/// Y = W_matrix x U^T: we store it transposed (a patch per row) so that the
/// pixel index is the outer one and a range of pixels, or of images, is a
/// contiguous block of rows (conv_gpu.hpp splits the weight gradient's sum that way).
///
/// The price is memory: U holds C_in*K*K*Ho*Wo values per image where x held
/// C_in*H*W, about K*K times more for stride 1 and "same" padding (9x for 3x3):
/// unrolled_floats() counts them.
///
/// col2im is the adjoint (the transpose) of im2col: it maps a matrix dU of U's
/// shape back to the input, adding up every copy of each input value:
///
///     dx[n][ci][ih][iw] = sum of dU[(n, oh, ow)][(ci, kh, kw)] over every (oh, ow, kh, kw)
///                         with oh*S - P + kh = ih and ow*S - P + kw = iw
///
/// It sums because im2col copied x[n][ci][ih][iw] into up to K*K places
/// (one per patch that covers it); a value used in several places gets the sum
/// of the gradients of all its uses. So <im2col(x), c> = <x, col2im(c)> for any x and c.
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

#include "02_conv_pool/conv.hpp"

namespace course {

/// Rows of U for a batch of B: B * Ho * Wo output pixels.
inline long unrolled_rows(int B, const ConvGeometry& g) { return static_cast<long>(B) * g.out_h() * g.out_w(); }

/// Columns of U: C_in * K * K taps, the length of one patch (and of one filter).
inline int patch_size(const ConvGeometry& g) { return g.C_in * g.K * g.K; }

/// Floats in U for a batch of B: unrolled_rows(B, g) * patch_size(g).
inline std::size_t unrolled_floats(int B, const ConvGeometry& g) {
  return static_cast<std::size_t>(unrolled_rows(B, g)) * static_cast<std::size_t>(patch_size(g));
}

/// im2col on the device: x [B, C_in, H, W] -> U [B*Ho*Wo, C_in*K*K] (layout above).
/// Every element of U is written (padding taps with 0). Asynchronous on `stream`.
/// Throws std::invalid_argument for a bad geometry, B < 1 or a null pointer.
void im2col_gpu(const float* x, int B, const ConvGeometry& g, float* U, cudaStream_t stream = 0);

/// col2im on the device: dU [B*Ho*Wo, C_in*K*K] -> dx [B, C_in, H, W], each input value the
/// sum of all its copies' entries (layout above). dx is overwritten, every element of it.
/// Asynchronous on `stream`. Throws std::invalid_argument like im2col_gpu.
void col2im_gpu(const float* dU, int B, const ConvGeometry& g, float* dx, cudaStream_t stream = 0);

}  // namespace course
