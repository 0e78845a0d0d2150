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
  // TODO(Task 8.1): stage the input tile with its halo and the block's weights in shared memory, chans channels at a time; each thread sums the Q x Q conv outputs of its position for 4 filters over its part of the channels (every splits-th); the parts add their sums through shared memory in part order; part 0 then adds the bias, applies the activation, keeps the first maximum of the window and writes y and the window offset dh * Q + dw
  // HINT: the tile's first output (qh0, qw0) reads input rows from qh0 * Q - P: cell (row, col) of the staged tile is input (qh0 Q - P + row, qw0 Q - P + col), 0 outside the image.
  // HINT: a thread at (th, tw) of the tile reads tile rows th Q + dh + kh and columns tw Q + dw + kw; stage the weights as [channel][tap][16 filters] so that its 4 filters are one float4.
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
