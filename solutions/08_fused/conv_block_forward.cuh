/// @file conv_block_forward.cuh
/// @brief Stage 08 (Task 8.1, device): conv + bias + activation + max-pool in one pass over a tile.
///
/// Stages 05 and 06 run a conv block as four kernels (conv, bias, activation,
/// pool) and write three tensors on the way that the next kernel reads back:
/// z, act(z) and the pool's output, plus an int arg-max. Here one block of
/// threads computes a tile of the pool's output from the input tile it stages
/// in shared memory, and keeps everything in between in registers:
///
///     input tile (with its halo) -> Q x Q conv outputs per thread (registers) -> + b, act -> max -> y, argmax
///
/// Each thread owns one output position of y for 4 filters: the Q x Q conv
/// outputs under that position's pool window, 4 Q^2 sums in registers. Its
/// window of the input is (Q + K - 1) x (Q + K - 1) cells of the tile. For each
/// input channel and kernel row it reads its Q rows of Q + K - 1 cells once
/// into registers and uses every cell for all K taps and all 4 filters; the 4
/// filters' weights of one tap are one float4 from shared memory, the same
/// address for the whole warp (a broadcast).
///
/// A small plane leaves most of the 64 position slots empty (conv3 of
/// `cnn-deep`: 3 x 3 outputs). Rather than idle, the spare slots split each
/// position's sum over the input channels: `splits` threads take every
/// splits-th channel of one position, and at the end add their sums through
/// shared memory, part 1, 2, ... onto part 0, in that order (the same bits
/// every run). A thread's chain of multiply-adds, what bounds the kernel when
/// its block has few warps, is then `splits` times shorter.
#pragma once

#include "08_fused/conv_block_forward.hpp"
#include "08_fused/fused_common.cuh"

namespace course {

/// The forward pass of block `block` of a.blocks (layout in ConvForwardArgs), K and Q known to the compiler.
template <int K, int Q>
__device__ void conv_block_forward_tile(const ConvForwardArgs& a, int block, float* smem) {
  // Given: the block's coordinates, this thread's position, filters and part, and the shared-memory layout.
  const ConvBlockShape& s = a.s;
  constexpr int kTaps = K * K;
  const int tiles = a.tiles_h * a.tiles_w;
  const int tile = block % tiles;
  const int filter_group = block / tiles % a.filter_groups;
  const int image_group = block / (tiles * a.filter_groups);
  const int qh0 = tile / a.tiles_w * a.tile_h, qw0 = tile % a.tiles_w * a.tile_w;  // the tile's first output of y
  const int n0 = image_group * a.images, f0 = filter_group * kConvGroup;

  // This thread: one output position (image, th, tw) of the tile, filters f0 + 4 quad .. f0 + 4 quad + 3,
  // and part `part` of the sum over the channels (slots past splits * positions sit idle).
  const int slot = static_cast<int>(threadIdx.x) % kConvSlots, quad = static_cast<int>(threadIdx.x) / kConvSlots;
  const int per_image = a.tile_h * a.tile_w, positions = a.images * per_image;
  const int position = slot % positions, part = slot / positions;
  const int image = position / per_image, th = position % per_image / a.tile_w, tw = position % a.tile_w;
  const int n = n0 + image, qh = qh0 + th, qw = qw0 + tw;
  const bool summing = part < a.splits;
  const bool active = summing && n < a.B && qh < s.Hq && qw < s.Wq;

  // Shared memory: the input tiles [images][chans][IH][IW], then the weights [chans][K*K][kConvGroup].
  const int IH = a.tile_h * Q + K - 1, IW = a.tile_w * Q + K - 1;
  float* tile_in = smem;
  float* tile_w = smem + round_up_to_4(a.images * a.chans * IH * IW);
  const int top = qh0 * Q - s.P, left = qw0 * Q - s.P;  // input cell of the staged tile's (0, 0)

  float acc[4][Q][Q];
#pragma unroll
  for (int j = 0; j < 4; ++j)
#pragma unroll
    for (int dh = 0; dh < Q; ++dh)
#pragma unroll
      for (int dw = 0; dw < Q; ++dw) acc[j][dh][dw] = 0.f;

  for (int c0 = 0; c0 < s.C; c0 += a.chans) {
    const int cc = min(a.chans, s.C - c0);
    __syncthreads();  // every thread is done with the previous stage
    // BEGIN Task 8.1 (device): stage channels c0 .. c0 + cc - 1: the input tiles of the block's images with their halo (0 for the padding and past the image), then the block's kConvGroup filters' weights as [channel][tap][filter]
    // HINT: the tile's first output (qh0, qw0) reads input rows from qh0 * Q - P: cell (row, col) of the staged tile is input (qh0 Q - P + row, qw0 Q - P + col), 0 outside the image (`top`, `left`).
    // HINT: stage the weights as [channel][tap][16 filters] (0 past F), so that a thread's 4 filters of one tap are one float4.
    for (int i = threadIdx.x; i < a.images * cc * IH * IW; i += blockDim.x) {
      const int col = i % IW, row = i / IW % IH, c = i / (IW * IH) % cc, im = i / (IW * IH * cc);
      const int nn = n0 + im, ih = top + row, iw = left + col;
      float v = 0.f;  // the padding, and the rows and columns past the image
      if (nn < a.B && ih >= 0 && ih < s.H && iw >= 0 && iw < s.W)
        v = a.x[((static_cast<long>(nn) * s.C + c0 + c) * s.H + ih) * s.W + iw];
      tile_in[((im * a.chans + c) * IH + row) * IW + col] = v;
    }
    for (int i = threadIdx.x; i < kConvGroup * cc * kTaps; i += blockDim.x) {
      const int tap = i % kTaps, c = i / kTaps % cc, fl = i / (kTaps * cc);  // reads W row by row
      const int f = f0 + fl;
      tile_w[(c * kTaps + tap) * kConvGroup + fl] =
          f < s.F ? a.w[(static_cast<long>(f) * s.C + c0 + c) * kTaps + tap] : 0.f;
    }
    // END Task 8.1
    __syncthreads();

    // BEGIN Task 8.1 (device): this thread's part of the staged channels (every splits-th, from `part`): add into acc[j][dh][dw] the K x K taps of the conv output (th Q + dh, tw Q + dw) of its image for its 4 filters
    // HINT: a thread at (th, tw) of the tile reads tile rows th Q + dh + kh and columns tw Q + dw + kw; read the Q rows of Q + K - 1 cells of one kernel row into registers once, and use each cell for every kw and all 4 filters.

    const float* in = tile_in + image * a.chans * IH * IW + th * Q * IW + tw * Q;  // this window's (0, 0)
    for (int c = summing ? part : cc; c < cc; c += a.splits) {
      const float* in_c = in + c * IH * IW;
      const float4* w_c = reinterpret_cast<const float4*>(tile_w + c * kTaps * kConvGroup) + quad;
#pragma unroll
      for (int kh = 0; kh < K; ++kh) {
        float row[Q][Q + K - 1];  // rows dh + kh of the window, read once for all taps and filters
#pragma unroll
        for (int dh = 0; dh < Q; ++dh)
#pragma unroll
          for (int j = 0; j < Q + K - 1; ++j) row[dh][j] = in_c[(dh + kh) * IW + j];
#pragma unroll
        for (int kw = 0; kw < K; ++kw) {
          const float4 wv = w_c[(kh * K + kw) * (kConvGroup / 4)];
#pragma unroll
          for (int dh = 0; dh < Q; ++dh)
#pragma unroll
            for (int dw = 0; dw < Q; ++dw) {
              const float v = row[dh][dw + kw];
              acc[0][dh][dw] += v * wv.x;
              acc[1][dh][dw] += v * wv.y;
              acc[2][dh][dw] += v * wv.z;
              acc[3][dh][dw] += v * wv.w;
            }
        }
      }
    }
    // END Task 8.1
  }

  // acc now holds this part's share of the sums; the position's other parts hold the rest.
  // BEGIN Task 8.1 (device): with splits > 1, the parts add their sums through shared memory: parts 1 .. splits - 1 write theirs, part 0 adds them in part order (the same bits every run)
  // HINT: the last stage's shared memory is free once every thread has read it: one __syncthreads() before the writes, one between the writes and the reads.
  if (a.splits > 1) {
    // Parts 1 .. splits - 1 leave their sums in shared memory, value v of every position side by side
    // (consecutive lanes, consecutive banks); part 0 adds them in part order.
    constexpr int kValues = 4 * Q * Q;
    float* sums = smem;  // [quad][part - 1][value][position]
    const auto at = [&](int p, int v) { return ((quad * (a.splits - 1) + p - 1) * kValues + v) * positions + position; };
    __syncthreads();  // the last stage has been read: its memory takes the sums
    if (summing && part > 0)
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int dh = 0; dh < Q; ++dh)
#pragma unroll
          for (int dw = 0; dw < Q; ++dw) sums[at(part, (j * Q + dh) * Q + dw)] = acc[j][dh][dw];
    __syncthreads();
    if (part == 0)
      for (int p = 1; p < a.splits; ++p)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int dh = 0; dh < Q; ++dh)
#pragma unroll
            for (int dw = 0; dw < Q; ++dw) acc[j][dh][dw] += sums[at(p, (j * Q + dh) * Q + dw)];
  }
  // END Task 8.1

  if (!active || part != 0) return;  // part 0 of an active position writes its 4 filters' outputs
  // BEGIN Task 8.1 (device): for each of this thread's 4 filters below F, add the bias, apply the activation, keep the first maximum of the Q x Q window (row-major, strict >) and write y and, when Q > 1, the window offset dh * Q + dw
  // HINT: the activation is monotone, but apply it to every value before comparing: the first maximum must be the one stage 02's max-pool takes.
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int f = f0 + quad * 4 + j;
    if (f >= s.F) break;
    const float bias = a.b[f];
    // The window's first maximum in row-major order (strict >), as stage 02's max-pool.
    float best = fused_activate(s.act, acc[j][0][0] + bias);
    int arg = 0;
#pragma unroll
    for (int dh = 0; dh < Q; ++dh)
#pragma unroll
      for (int dw = 0; dw < Q; ++dw) {
        const float v = fused_activate(s.act, acc[j][dh][dw] + bias);
        if (v > best) {
          best = v;
          arg = dh * Q + dw;
        }
      }
    const long o = ((static_cast<long>(n) * s.F + f) * s.Hq + qh) * s.Wq + qw;
    a.y[o] = best;
    if (Q > 1) a.argmax[o] = static_cast<unsigned char>(arg);
  }
  // END Task 8.1
}

/// Virtual block `block` of the forward kernel, as the persistent kernel runs it (fused_phases.hpp): K and Q
/// chosen when it runs, among the shapes make_conv_block_shape() admits.
__device__ inline void conv_block_forward_block(const ConvForwardArgs& a, int block, float* smem) {
  switch (a.s.K * 10 + a.s.Q) {
    case 11: conv_block_forward_tile<1, 1>(a, block, smem); break;
    case 12: conv_block_forward_tile<1, 2>(a, block, smem); break;
    case 31: conv_block_forward_tile<3, 1>(a, block, smem); break;
    case 32: conv_block_forward_tile<3, 2>(a, block, smem); break;
    case 51: conv_block_forward_tile<5, 1>(a, block, smem); break;
    case 52: conv_block_forward_tile<5, 2>(a, block, smem); break;
    default: break;  // make_conv_block_shape() admits no other shape
  }
}

}  // namespace course
