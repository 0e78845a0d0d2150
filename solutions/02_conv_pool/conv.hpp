/// @file conv.hpp
/// @brief Stage 02: 2-D convolution of a minibatch, forward and backward, with padding and stride.
///
/// Layouts, all row-major (NCHW):
///
///     x   [B, C_in, H, W]
///     W   [C_out, C_in, K, K]        one K x K filter per (output channel, input channel)
///     b   [C_out]
///     y   [B, C_out, Ho, Wo]         Ho = floor((H + 2P - K) / S) + 1, Wo likewise
///
/// Forward (a cross-correlation, as every deep-learning library computes it),
/// with x read as 0 outside the image (the padding P):
///
///     y[n][co][oh][ow] = b[co] + sum_{ci, kh, kw} W[co][ci][kh][kw] * x[n][ci][oh*S - P + kh][ow*S - P + kw]
///
/// Backward, given dy = dL/dy:
///
///     dW[co][ci][kh][kw] = sum_{n, oh, ow} dy[n][co][oh][ow] * x[n][ci][oh*S - P + kh][ow*S - P + kw]
///     db[co]             = sum_{n, oh, ow} dy[n][co][oh][ow]
///     dx[n][ci][ih][iw]  = sum_{co, kh, kw} W[co][ci][kh][kw] * dy[n][co][oh][ow]
///                              over the (oh, ow) with oh*S - P + kh = ih and ow*S - P + kw = iw
///
/// The weight gradient correlates the input with the output gradient. The input
/// gradient, read as a loop over input cells, is a *full* convolution of dy
/// (spread out by the stride) with the kernel flipped in both axes; only the
/// H x W cells of the real image are kept, so no gradient lands on padding.
///
/// How the loops run fast on one core. Each example is copied once into a
/// zero-padded buffer, so no loop tests for the border. Then one kernel tap
/// (co, ci, kh, kw) multiplies every output cell's input by the same weight,
/// and if the output plane is stored with the padded input's row length (`Wp`)
/// instead of its own (`Wo`), the input cells that tap reads lie as far apart
/// as the output cells (S times as far at stride S): the whole plane is one long loop, which the
/// compiler turns into SIMD instructions, rather than Ho short rows. The
/// `Wp - Wo` extra columns of each stored row are computed and never used.
/// Finally all K*K taps of a filter plane share one pass over the plane
/// (add_filter_plane), so each output is loaded and stored once per K*K
/// multiply-adds. No K*K copy of the input is made (that is im2col, a later stage's).
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/core/not_implemented.hpp"

namespace course {

/// The shape of one convolution layer: an input example [C_in, H, W], C_out
/// filters of K x K, padding P on every side, stride S.
struct ConvGeometry {
  int C_in = 1, H = 1, W = 1;
  int C_out = 1, K = 1, P = 0, S = 1;

  int padded_h() const { return H + 2 * P; }
  int padded_w() const { return W + 2 * P; }
  /// floor((H + 2P - K) / S) + 1
  int out_h() const { return (padded_h() - K) / S + 1; }
  /// floor((W + 2P - K) / S) + 1
  int out_w() const { return (padded_w() - K) / S + 1; }
  /// Values in one input example.
  long in_size() const { return static_cast<long>(C_in) * H * W; }
  /// Values in one output example.
  long out_size() const { return static_cast<long>(C_out) * out_h() * out_w(); }
  /// Values in W.
  long weight_size() const { return static_cast<long>(C_out) * C_in * K * K; }

  /// "conv 16 -> 32, 3x3, pad 1, stride 1 on 16x14x14"
  std::string str() const {
    return "conv " + std::to_string(C_in) + " -> " + std::to_string(C_out) + ", " + std::to_string(K) + "x" +
           std::to_string(K) + ", pad " + std::to_string(P) + ", stride " + std::to_string(S) + " on " +
           std::to_string(C_in) + "x" + std::to_string(H) + "x" + std::to_string(W);
  }

  /// Throws std::invalid_argument naming the problem when the layer cannot run.
  void check() const {
    if (C_in < 1 || H < 1 || W < 1 || C_out < 1 || K < 1 || S < 1 || P < 0)
      throw std::invalid_argument(str() + ": every size must be at least 1 and the padding at least 0");
    if (K > padded_h() || K > padded_w())
      throw std::invalid_argument(str() + ": the " + std::to_string(K) + "x" + std::to_string(K) +
                                  " kernel is larger than the padded input " + std::to_string(padded_h()) + "x" +
                                  std::to_string(padded_w()));
  }
};

/// Plane loops run over a whole number of 16-value blocks (one AVX-512
/// register of floats, two AVX2 ones): the compiler's vector loop then covers
/// every cell and its slow one-value-at-a-time tail never runs. The few extra
/// cells land in spare room at the end of each scratch buffer and are never read back.
constexpr long kVectorBlock = 16;

/// n rounded up to a multiple of kVectorBlock.
inline long round_up_to_block(long n) { return (n + kVectorBlock - 1) / kVectorBlock * kVectorBlock; }

/// Copies one example [C, H, W] into the middle of `padded` [C, H + 2P, W + 2P].
/// The border of `padded` is not written: the caller zeroes it once.
template <typename T>
void copy_into_padded(const T* src, int C, int H, int W, int P, T* padded) {
  const int Hp = H + 2 * P, Wp = W + 2 * P;
  for (int c = 0; c < C; ++c)
    for (int h = 0; h < H; ++h) {
      const T* from = src + (static_cast<long>(c) * H + h) * W;
      std::copy(from, from + W, padded + (static_cast<long>(c) * Hp + h + P) * Wp + P);
    }
}

/// Copies `rows` rows of `cols` values from rows `src_pitch` apart into a dense [rows, cols] block.
template <typename T>
void copy_rows(const T* src, long src_pitch, T* dst, int rows, int cols) {
  for (int r = 0; r < rows; ++r) std::copy(src + r * src_pitch, src + r * src_pitch + cols, dst + static_cast<long>(r) * cols);
}

/// acc[q] += sum_{kh, kw} w[kh*K + kw] * src[q + kh*pitch + kw] for q in [0, n),
/// with K known to the compiler (see add_filter_plane).
template <int K, typename T>
void add_filter_plane_k(T* acc, const T* w, const T* src, long pitch, long n) {
  for (long q = 0; q < n; ++q) {
    T sum = acc[q];
    for (int kh = 0; kh < K; ++kh)
      for (int kw = 0; kw < K; ++kw) sum += w[kh * K + kw] * src[q + kh * pitch + kw];
    acc[q] = sum;
  }
}

/// One K x K filter plane w over a whole plane:
///
///     acc[q] += sum_{kh, kw} w[kh*K + kw] * src[q*S + kh*pitch + kw]     for q in [0, n)
///
/// All K*K taps go into one pass over q, so each acc value is loaded and stored
/// once per K*K multiply-adds rather than once per multiply-add. The compiler
/// unrolls the tap loops only when it knows K, so the usual sizes (1, 3, 5)
/// get a copy of their own; other sizes and strides run one pass per tap.
template <typename T>
void add_filter_plane(T* acc, const T* w, int K, const T* src, long pitch, int S, long n) {
  if (S == 1 && K == 1) return add_filter_plane_k<1>(acc, w, src, pitch, n);
  if (S == 1 && K == 3) return add_filter_plane_k<3>(acc, w, src, pitch, n);
  if (S == 1 && K == 5) return add_filter_plane_k<5>(acc, w, src, pitch, n);
  for (int kh = 0; kh < K; ++kh)
    for (int kw = 0; kw < K; ++kw) {
      const T wt = w[kh * K + kw];
      const T* s = src + kh * pitch + kw;
      for (long q = 0; q < n; ++q) acc[q] += wt * s[q * S];
    }
}

/// dw[kh*K + kw] += sum_q dy[q] * src[q + kh*pitch + kw] for q in [0, n), with K
/// known to the compiler and n a multiple of kVectorBlock (see add_filter_plane_dots).
template <int K, typename T>
void add_filter_plane_dots_k(T* dw, const T* dy, const T* src, long pitch, long n) {
  // kVectorBlock running sums per tap, one per SIMD lane, added up once at the
  // end: the compiler keeps them in vector registers for the whole loop.
  T lanes[K * K][kVectorBlock] = {};
  for (long q = 0; q < n; q += kVectorBlock)
    for (int kh = 0; kh < K; ++kh)
      for (int kw = 0; kw < K; ++kw) {
        const T* s = src + q + kh * pitch + kw;
        T* lane = lanes[kh * K + kw];
#pragma omp simd
        for (int l = 0; l < kVectorBlock; ++l) lane[l] += dy[q + l] * s[l];
      }
  for (int t = 0; t < K * K; ++t) {
    T sum = 0;
    for (int l = 0; l < kVectorBlock; ++l) sum += lanes[t][l];
    dw[t] += sum;
  }
}

/// The K*K dot products of one filter plane's gradient:
///
///     dw[kh*K + kw] += sum_q dy[q] * src[q*S + kh*pitch + kw]     for q in [0, n)
///
/// All taps share one pass over dy, as in add_filter_plane; n must be a
/// multiple of kVectorBlock.
template <typename T>
void add_filter_plane_dots(T* dw, const T* dy, int K, const T* src, long pitch, int S, long n) {
  if (S == 1 && K == 1) return add_filter_plane_dots_k<1>(dw, dy, src, pitch, n);
  if (S == 1 && K == 3) return add_filter_plane_dots_k<3>(dw, dy, src, pitch, n);
  if (S == 1 && K == 5) return add_filter_plane_dots_k<5>(dw, dy, src, pitch, n);
  for (int kh = 0; kh < K; ++kh)
    for (int kw = 0; kw < K; ++kw) {
      const T* s = src + kh * pitch + kw;
      T sum = 0;
      // A sum is a reduction: the pragma lets the compiler split it over SIMD
      // lanes (it may not on its own, since floating-point + is not associative).
#pragma omp simd reduction(+ : sum)
      for (long q = 0; q < n; ++q) sum += dy[q] * s[q * S];
      dw[kh * K + kw] += sum;
    }
}

/// Forward pass: y = conv(x, W) + b for every example of the batch (layouts above).
template <typename T>
void conv2d_forward(const T* x, const T* W, const T* b, T* y, int B, const ConvGeometry& g) {
  g.check();
  // BEGIN Task 2.1: conv2d forward, y[n][co][oh][ow] = b[co] + sum over (ci, kh, kw) of W * x[n][ci][oh*S-P+kh][ow*S-P+kw] (0 on padding)
  // HINT: the plainest correct form is seven loops (n, co, oh, ow, ci, kh, kw) that skip taps whose ih or iw lies outside the image.
  // HINT: for speed, see the header comment: pad each example once, then add each filter plane to a whole output plane with add_filter_plane.
  const int Ho = g.out_h(), Wo = g.out_w(), Wp = g.padded_w();
  const long plane = static_cast<long>(g.padded_h()) * Wp;
  // The output plane on the padded row pitch (last row cut at Wo), rounded up to whole vector blocks.
  const long cells = round_up_to_block(static_cast<long>(Ho - 1) * Wp + Wo);
  const long spare = g.S * kVectorBlock;  // room for the reads of the rounded-up cells
  std::vector<T> padded(static_cast<std::size_t>(g.C_in * plane + spare), T(0));  // [C_in, Hp, Wp], border stays 0
  std::vector<T> acc(static_cast<std::size_t>(std::max(cells, static_cast<long>(Ho) * Wp)));  // one output plane, rows Wp apart
  for (int n = 0; n < B; ++n) {
    copy_into_padded(x + n * g.in_size(), g.C_in, g.H, g.W, g.P, padded.data());
    for (int co = 0; co < g.C_out; ++co) {
      std::fill(acc.begin(), acc.end(), b[co]);
      // Output (oh, ow) sits at acc[oh*Wp + ow] and reads padded[ci][oh*S + kh][ow*S + kw]:
      // S times as far along the padded rows, from the tap's first cell.
      for (int ci = 0; ci < g.C_in; ++ci)
        add_filter_plane(acc.data(), W + (static_cast<long>(co) * g.C_in + ci) * g.K * g.K, g.K,
                         padded.data() + ci * plane, Wp, g.S, cells);
      copy_rows(acc.data(), Wp, y + (static_cast<long>(n) * g.C_out + co) * Ho * Wo, Ho, Wo);
    }
  }
  // END Task 2.1
}

/// Weight and bias gradients, summed over the batch (overwritten, not accumulated):
///
///     dW[co][ci][kh][kw] = sum_{n, oh, ow} dy[n][co][oh][ow] * x[n][ci][oh*S - P + kh][ow*S - P + kw]
///     db[co]             = sum_{n, oh, ow} dy[n][co][oh][ow]
///
/// x [B, C_in, H, W], dy [B, C_out, Ho, Wo], dW [C_out, C_in, K, K], db [C_out].
template <typename T>
void conv2d_backward_weight(const T* x, const T* dy, T* dW, T* db, int B, const ConvGeometry& g) {
  g.check();
  // BEGIN Task 2.2: conv2d weight and bias gradients: dW = input correlated with dy, db = sums of dy, both over the whole batch
  // HINT: dW[co][ci][kh][kw] is a dot product of the plane dy[n][co] with the input window shifted by (kh, kw); zero dW and db first.
  // HINT: padding cells are 0, so they add nothing to dW: skip them, or read a zero-padded copy of the example.
  const int Ho = g.out_h(), Wo = g.out_w(), Wp = g.padded_w();
  const long plane = static_cast<long>(g.padded_h()) * Wp;
  const long cells = round_up_to_block(static_cast<long>(Ho - 1) * Wp + Wo);  // as in conv2d_forward
  const long spare = g.S * kVectorBlock;
  std::fill(dW, dW + g.weight_size(), T(0));
  std::fill(db, db + g.C_out, T(0));
  std::vector<T> padded(static_cast<std::size_t>(g.C_in * plane + spare), T(0));  // [C_in, Hp, Wp], border stays 0
  // dy[n][co] on the padded row pitch; the columns past Wo and the rounded-up cells stay 0, so they add nothing.
  std::vector<T> dy_wide(static_cast<std::size_t>(std::max(cells, static_cast<long>(Ho) * Wp)), T(0));
  for (int n = 0; n < B; ++n) {
    copy_into_padded(x + n * g.in_size(), g.C_in, g.H, g.W, g.P, padded.data());
    for (int co = 0; co < g.C_out; ++co) {
      const T* dyc = dy + (static_cast<long>(n) * g.C_out + co) * Ho * Wo;
      T sum = 0;
#pragma omp simd reduction(+ : sum)
      for (long i = 0; i < static_cast<long>(Ho) * Wo; ++i) sum += dyc[i];
      db[co] += sum;
      for (int oh = 0; oh < Ho; ++oh) std::copy(dyc + oh * Wo, dyc + (oh + 1) * Wo, dy_wide.data() + oh * Wp);
      for (int ci = 0; ci < g.C_in; ++ci)
        add_filter_plane_dots(dW + (static_cast<long>(co) * g.C_in + ci) * g.K * g.K, dy_wide.data(), g.K,
                              padded.data() + ci * plane, Wp, g.S, cells);
    }
  }
  // END Task 2.2
}

/// Input gradient dx [B, C_in, H, W] from dy [B, C_out, Ho, Wo] and W (overwritten).
///
/// Written as a full convolution with the flipped kernel: spread dy out by the
/// stride (S - 1 zeros between neighbours) and pad it by K - 1 zeros on every
/// side into `dyd`, where dy[oh][ow] sits at [K-1 + oh*S][K-1 + ow*S]. Then
///
///     dx[ih][iw] = sum_{co, kh, kw} W[co][ci][K-1-kh][K-1-kw] * dyd[co][ih + P + kh][iw + P + kw]
///
/// The full convolution yields a gradient for every cell of the padded input
/// (H + 2P) x (W + 2P); the offset P keeps the H x W cells of the image and
/// drops the padded ones, whose "gradient" belongs to no input.
template <typename T>
void conv2d_backward_input(const T* dy, const T* W, T* dx, int B, const ConvGeometry& g) {
  g.check();
  // BEGIN Task 2.3: conv2d input gradient: a full convolution of dy (spread by the stride) with the kernel flipped in both axes, padding cells dropped
  // HINT: plainest form: zero dx, then for every (n, co, oh, ow, ci, kh, kw) add W[co][ci][kh][kw] * dy[n][co][oh][ow] to dx at (oh*S-P+kh, ow*S-P+kw) when that cell is inside the image.
  // HINT: the fast form (the comment above): dyd read forwards, the kernel backwards (that is the flip), one add_filter_plane per (co, ci).
  const int Ho = g.out_h(), Wo = g.out_w(), K = g.K;
  const int Hd = g.padded_h() + K - 1, Wd = g.padded_w() + K - 1;  // dyd covers the padded input plus K - 1
  const long dplane = static_cast<long>(Hd) * Wd;
  // The image on dyd's row pitch (last row cut at W), rounded up to whole vector blocks.
  const long cells = round_up_to_block(static_cast<long>(g.H - 1) * Wd + g.W);
  std::vector<T> dyd(static_cast<std::size_t>(g.C_out * dplane + kVectorBlock), T(0));  // the cells between dy's stay 0
  std::vector<T> acc(static_cast<std::size_t>(std::max(cells, static_cast<long>(g.H) * Wd)));  // one plane, rows Wd apart
  std::vector<T> flipped(static_cast<std::size_t>(K) * K);  // one filter plane, flipped in both axes
  for (int n = 0; n < B; ++n) {
    for (int co = 0; co < g.C_out; ++co)
      for (int oh = 0; oh < Ho; ++oh)
        for (int ow = 0; ow < Wo; ++ow)
          dyd[co * dplane + static_cast<long>(K - 1 + oh * g.S) * Wd + K - 1 + ow * g.S] =
              dy[((static_cast<long>(n) * g.C_out + co) * Ho + oh) * Wo + ow];
    for (int ci = 0; ci < g.C_in; ++ci) {
      std::fill(acc.begin(), acc.end(), T(0));
      for (int co = 0; co < g.C_out; ++co) {
        const T* Wc = W + (static_cast<long>(co) * g.C_in + ci) * K * K;
        for (int k = 0; k < K * K; ++k) flipped[k] = Wc[K * K - 1 - k];  // [kh][kw] <- [K-1-kh][K-1-kw]
        add_filter_plane(acc.data(), flipped.data(), K, dyd.data() + co * dplane + static_cast<long>(g.P) * Wd + g.P,
                         Wd, 1, cells);
      }
      copy_rows(acc.data(), Wd, dx + (static_cast<long>(n) * g.C_in + ci) * g.H * g.W, g.H, g.W);
    }
  }
  // END Task 2.3
}

}  // namespace course
