/// @file conv_block_backward.cuh
/// @brief Stage 08 (Tasks 8.2 and 8.3, device): the conv block's backward chain in one kernel of two parts.
///
/// Stages 05 and 06 run a conv block backward as a chain of kernels: pool
/// backward writes dL/da over the whole conv output, the activation's backward
/// multiplies it by act'(z) into dL/dz, and then three kernels read dL/dz: the
/// bias gradient, the weight gradient and the input gradient. Here dL/dz is
/// never written. Each part rebuilds the values it needs from the block's
/// output gradient dy, its output y and the arg-max (ConvBackwardArgs), and the
/// pool's routing makes that cheap: of the Q x Q conv outputs under a window,
/// only the arg-max has a gradient.
///
/// **Weight and bias gradients** (Task 8.2). For each pooled output (qh, qw)
/// the one conv output with a gradient is (qh Q + dh, qw Q + dw), (dh, dw) its
/// argmax, with the gradient g = dy act'(y). So the sums run over the pooled
/// outputs, Q^2 times fewer terms than over the conv outputs:
///
///     dW[f][c][kh][kw] = sum over n, qh, qw of g[n][f][qh][qw] * x[n][c][qh Q + dh - P + kh][qw Q + dw - P + kw]
///     db[f]            = sum over n, qh, qw of g[n][f][qh][qw]
///
/// Both sums run over the whole batch: a reduction across the blocks of the
/// grid, the one thing here that one block cannot finish. Each block sums the
/// examples of its slice, in a fixed order, and writes a partial sum; the
/// update (Task 8.7) adds the slices. Within a block a thread owns the K x K
/// weights of one (filter, channel) pair: per pooled output it reads g and the
/// offset of the winning cell once (staged once per filter) and then the K x K
/// input cells under the taps, K^2 multiply-adds for K^2 + 2 reads of shared
/// memory, which is what bounds this loop. When the block has fewer pairs than
/// threads (conv1: 16 filters of one channel), wg_split threads share a pair,
/// each taking every wg_split-th pooled output, and add their sums at the end.
///
/// **Input gradient** (Task 8.3). The full convolution of dL/dz with the
/// flipped kernel, stage 02's formula at stride 1:
///
///     dx[n][c][ih][iw] = sum over f, kh, kw of W[f][c][kh][kw] * dz[n][f][ih + P - kh][iw + P - kw]
///
/// A block stages the tile of dz its cells need, (tile + K - 1)^2 per filter,
/// rebuilt from dy, y and argmax (0 away from the window maxima and past the
/// pooled rows and columns), and the weights [filter][tap][16 channels]; each
/// thread sums one cell for 4 channels. No sum crosses blocks here.
///
/// The two parts share nothing but their inputs, so one launch runs both:
/// blocks [0, weight_blocks) the first, the rest the second.
#pragma once

#include "08_fused/conv_block_backward.hpp"
#include "08_fused/fused_common.cuh"

namespace course {

/// Weight-gradient block `block` of a.weight_blocks: partial sums of dW and db over its slice of examples.
template <int K, int Q>
__device__ void conv_block_weight_gradient_tile(const ConvBackwardArgs& a, int block, float* smem) {
  const ConvBlockShape& s = a.s;
  constexpr int kTaps = K * K;
  const int chan_group = block % a.wg_chan_groups;
  const int filter_group = block / a.wg_chan_groups % a.wg_filter_groups;
  const int slice = block / (a.wg_chan_groups * a.wg_filter_groups);
  const int c0 = chan_group * a.wg_chans, nc = min(a.wg_chans, s.C - c0);
  const int f0 = filter_group * a.wg_filters, nf = min(a.wg_filters, s.F - f0);
  const int n0 = slice * a.wg_images, ni = min(a.wg_images, a.B - n0);
  const int Wp = s.W + 2 * s.P;
  const int cells = s.Hq * s.Wq;  // pooled outputs per plane: the terms of the sums, per example

  // Shared memory: x [wg_chans][wg_pitch], zero-padded planes; g [wg_filters][cells]; offset [wg_filters][cells].
  float* xs = smem;
  float* gs = xs + round_up_to_4(a.wg_chans * a.wg_pitch);
  int* offset = reinterpret_cast<int*>(gs + round_up_to_4(a.wg_filters * cells));

  // This thread: part `part` of the wg_split threads of pair (fl, cl), channel fastest.
  const int pair = static_cast<int>(threadIdx.x) / a.wg_split, part = static_cast<int>(threadIdx.x) % a.wg_split;
  const int fl = pair / nc, cl = pair % nc;
  const bool active = pair < nf * nc;
  const float* g = gs + fl * cells;
  const int* at = offset + fl * cells;
  const float* xc = xs + cl * a.wg_pitch;
  // BEGIN Task 8.2 (device): with the block's coordinates, this thread's (filter, channel) pair and the shared-memory layout given above: for each example of the block's slice, stage the padded input planes of its channels, and g = dy act'(y) with the padded-plane offset of each window's winning cell for its filters; the wg_split threads of a pair add g * x over every wg_split-th pooled output into its K x K weights' sums; they add their sums with shuffles and the first writes the partial sums (and, in channel group 0, the bias sums) to the block's slice
  // HINT: stage x zero-padded, channel c at c * wg_pitch, row r at r (W + 2P): the input cell of tap (kh, kw) for the conv output (oh, ow) is then at offset (oh + kh) (W + 2P) + ow + kw of its plane, with no bounds test.
  // HINT: per pooled output a thread reads g and the offset once and then K * K inputs, one for each of its weights; consecutive threads take consecutive channels of one filter (wg_pitch is odd: their reads fall in different banks).
  float acc[kTaps];
#pragma unroll
  for (int t = 0; t < kTaps; ++t) acc[t] = 0.f;
  float bias_acc = 0.f;

  for (int im = 0; im < ni; ++im) {
    const long n = n0 + im;
    __syncthreads();  // the previous example's stage has been read
    stage_in_flight(
        nc * a.wg_pitch,
        [&](int i) {
          const int c = i / a.wg_pitch, ih = i % a.wg_pitch / Wp - s.P, iw = i % a.wg_pitch % Wp - s.P;
          return ih >= 0 && ih < s.H && iw >= 0 && iw < s.W ? a.x[((n * s.C + c0 + c) * s.H + ih) * s.W + iw] : 0.f;
        },
        [&](int i, float v) { xs[i] = v; });
    stage_in_flight(
        nf * cells,
        [&](int i) {
          const long o = (n * s.F + f0) * cells + i;  // filters f0 .. are consecutive planes of y
          return make_float2(a.dy[o] * fused_slope(s.act, a.y[o]), __int_as_float(Q > 1 ? a.argmax[o] : 0));
        },
        [&](int i, float2 v) {
          const int qh = i % cells / s.Wq, qw = i % s.Wq, win = __float_as_int(v.y);
          gs[i] = v.x;
          offset[i] = (qh * Q + win / Q) * Wp + qw * Q + win % Q;
        });
    __syncthreads();
    if (active) {
      for (int p = part; p < cells; p += a.wg_split) {
        const float gv = g[p];
        const float* xw = xc + at[p];
#pragma unroll
        for (int kh = 0; kh < K; ++kh)
#pragma unroll
          for (int kw = 0; kw < K; ++kw) acc[kh * K + kw] += gv * xw[kh * Wp + kw];
        bias_acc += gv;
      }
    }
  }

  // The wg_split threads of a pair are neighbouring lanes: add their sums in a fixed tree.
  for (int width = a.wg_split / 2; width > 0; width /= 2) {
#pragma unroll
    for (int t = 0; t < kTaps; ++t) acc[t] += __shfl_xor_sync(0xffffffffu, acc[t], width);
    bias_acc += __shfl_xor_sync(0xffffffffu, bias_acc, width);
  }
  if (!active || part != 0) return;
  const long slice_weights = static_cast<long>(s.F) * s.C * kTaps;
  float* dw = a.dw_partials + slice * slice_weights + (static_cast<long>(f0 + fl) * s.C + c0 + cl) * kTaps;
#pragma unroll
  for (int t = 0; t < kTaps; ++t) dw[t] = acc[t];
  if (chan_group == 0 && cl == 0) a.db_partials[static_cast<long>(slice) * s.F + f0 + fl] = bias_acc;
  // END Task 8.2
}

/// Input-gradient block `block` of a.input_blocks: one tile of dx for kConvGroup channels.
template <int K, int Q>
__device__ void conv_block_input_gradient_tile(const ConvBackwardArgs& a, int block, float* smem) {
  const ConvBlockShape& s = a.s;
  constexpr int kTaps = K * K;
  const int tiles = a.ig_tiles_h * a.ig_tiles_w;
  const int tile = block % tiles;
  const int chan_group = block / tiles % a.ig_chan_groups;
  const int image_group = block / (tiles * a.ig_chan_groups);
  const int ih0 = tile / a.ig_tiles_w * a.ig_tile_h, iw0 = tile % a.ig_tiles_w * a.ig_tile_w;
  const int n0 = image_group * a.ig_images, c0 = chan_group * kConvGroup;

  // This thread: one cell (image, th, tw) of the tile, channels c0 + 4 quad .. c0 + 4 quad + 3.
  const int slot = static_cast<int>(threadIdx.x) % kConvSlots, quad = static_cast<int>(threadIdx.x) / kConvSlots;
  const int per_image = a.ig_tile_h * a.ig_tile_w;
  const int image = slot / per_image, th = slot % per_image / a.ig_tile_w, tw = slot % a.ig_tile_w;
  const int n = n0 + image, ih = ih0 + th, iw = iw0 + tw;
  const bool active = image < a.ig_images && n < a.B && ih < s.H && iw < s.W;
  const int staged_image = min(image, a.ig_images - 1);

  // Shared memory: dz [ig_images][nf][DH][DW] (nf: the filters of this pass, at most ig_filters), then the
  // weights [ig_filters][K*K][kConvGroup].
  const int DH = a.ig_tile_h + K - 1, DW = a.ig_tile_w + K - 1;
  float* dzs = smem;
  float* ws = smem + round_up_to_4(a.ig_images * a.ig_filters * DH * DW);
  const int oh0 = ih0 + s.P - (K - 1), ow0 = iw0 + s.P - (K - 1);  // conv output of the staged dz's (0, 0)
  const int rows = s.Hq * Q, cols = s.Wq * Q;                        // the conv outputs the pool reads

  // BEGIN Task 8.3 (device): with the block's tile, this thread's cell and channels and the shared-memory layout given above: stage, ig_filters filters at a time, the tile of dz = dL/dz the block's cells need (rebuilt from dy, y and argmax) and the weights [filter][tap][16 channels]; each thread sums W * dz over filters and taps for its cell and 4 channels, then writes dx
  // HINT: cell (ih, iw) needs dz at (ih + P - kh, iw + P - kw): stage conv rows from ih0 + P - (K - 1), so that it reads staged row th + K - 1 - kh and column tw + K - 1 - kw.
  // HINT: dz is 0 outside [0, Hq Q) x [0, Wq Q) (the pool never reads the last rows and columns when Ho or Wo is odd) and wherever the window's argmax is another cell.
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  for (int f0 = 0; f0 < s.F; f0 += a.ig_filters) {
    const int nf = min(a.ig_filters, s.F - f0);
    __syncthreads();  // every thread is done with the previous stage
    stage_in_flight(
        a.ig_images * nf * DH * DW,
        [&](int i) {
          const int col = i % DW, row = i / DW % DH, fl = i / (DW * DH) % nf, im = i / (DW * DH * nf);
          const int nn = n0 + im, oh = oh0 + row, ow = ow0 + col;
          float v = 0.f;
          if (nn < a.B && oh >= 0 && oh < rows && ow >= 0 && ow < cols) {
            const int qh = oh / Q, qw = ow / Q;
            const long o = ((static_cast<long>(nn) * s.F + f0 + fl) * s.Hq + qh) * s.Wq + qw;
            if (Q == 1 || a.argmax[o] == (oh - qh * Q) * Q + (ow - qw * Q)) v = a.dy[o] * fused_slope(s.act, a.y[o]);
          }
          return v;
        },
        [&](int i, float v) { dzs[i] = v; });
    stage_in_flight(
        nf * kTaps * kConvGroup,
        [&](int i) {
          const int cl = i % kConvGroup, tap = i / kConvGroup % kTaps, fl = i / (kConvGroup * kTaps);
          const int c = c0 + cl;
          return c < s.C ? a.w[(static_cast<long>(f0 + fl) * s.C + c) * kTaps + tap] : 0.f;
        },
        [&](int i, float v) { ws[i] = v; });
    __syncthreads();

    const float* dz = dzs + staged_image * nf * DH * DW + th * DW + tw;  // this cell's window (0, 0)
    for (int fl = 0; fl < nf; ++fl) {
      const float* dz_f = dz + fl * DH * DW;
      const float4* w_f = reinterpret_cast<const float4*>(ws + fl * kTaps * kConvGroup) + quad;
#pragma unroll
      for (int kh = 0; kh < K; ++kh) {
        float r[K];  // staged row th + K - 1 - kh, columns tw .. tw + K - 1
#pragma unroll
        for (int j = 0; j < K; ++j) r[j] = dz_f[(K - 1 - kh) * DW + j];
#pragma unroll
        for (int kw = 0; kw < K; ++kw) {
          const float v = r[K - 1 - kw];
          const float4 wv = w_f[(kh * K + kw) * (kConvGroup / 4)];
          acc[0] += v * wv.x;
          acc[1] += v * wv.y;
          acc[2] += v * wv.z;
          acc[3] += v * wv.w;
        }
      }
    }
  }

  if (!active) return;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int c = c0 + quad * 4 + j;
    if (c < s.C) a.dx[((static_cast<long>(n) * s.C + c) * s.H + ih) * s.W + iw] = acc[j];
  }
  // END Task 8.3
}

/// Block `block` of the backward kernel: the weight-gradient part first, then the input-gradient part.
template <int K, int Q>
__device__ void conv_block_backward_tile(const ConvBackwardArgs& a, int block, float* smem) {
  if (block < a.weight_blocks)
    conv_block_weight_gradient_tile<K, Q>(a, block, smem);
  else
    conv_block_input_gradient_tile<K, Q>(a, block - a.weight_blocks, smem);
}

/// Virtual block `block` of the backward kernel, as the persistent kernel runs it (fused_phases.hpp): K and Q
/// chosen when it runs, among the shapes make_conv_block_shape() admits.
__device__ inline void conv_block_backward_block(const ConvBackwardArgs& a, int block, float* smem) {
  switch (a.s.K * 10 + a.s.Q) {
    case 11: conv_block_backward_tile<1, 1>(a, block, smem); break;
    case 12: conv_block_backward_tile<1, 2>(a, block, smem); break;
    case 31: conv_block_backward_tile<3, 1>(a, block, smem); break;
    case 32: conv_block_backward_tile<3, 2>(a, block, smem); break;
    case 51: conv_block_backward_tile<5, 1>(a, block, smem); break;
    case 52: conv_block_backward_tile<5, 2>(a, block, smem); break;
    default: break;  // make_conv_block_shape() admits no other shape
  }
}

}  // namespace course
