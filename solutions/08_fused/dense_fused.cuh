/// @file dense_fused.cuh
/// @brief Stage 08 (Tasks 8.4 and 8.5, device): dense layers with the bias and the activation in the epilogue, both ways.
///
/// **Forward** (Task 8.4). y = act(x W^T + b) is a GEMM whose epilogue, the
/// bias and the activation, runs on the sums before they leave the registers:
/// no separate bias or activation kernel, no pre-activation tensor. At batch
/// 64 the product has few outputs and a long sum (fc1 of `cnn`: 64 x 100
/// outputs, each a sum of 1568 products), so one block per output tile would
/// leave most of the GPU idle, each block walking the whole sum. The sum is
/// therefore split ("split-K"): block (tile, slice) sums its slice of IN, and
/// the slices must then be added. Without an extra kernel and without float
/// atomics (whose order, and so whose bits, change from run to run):
///
/// 1. every block writes its partial sums to `partials[slice]`;
/// 2. `__threadfence()` makes those writes visible to the whole GPU, then one
///    thread takes a ticket: `atomicAdd(&counters[tile], 1)` (an integer:
///    exact in any order);
/// 3. the block that draws the last ticket knows every slice of its tile is
///    written; it adds them in slice order 0, 1, 2, ... (read with `__ldcg`,
///    past the L1 cache, which is not kept coherent between multiprocessors),
///    applies the epilogue, and puts the counter back to 0 for the next launch.
///
/// The order of the final sum is fixed, whichever block comes last: the result
/// is the same bits every run.
///
/// **Backward** (Task 8.5). Given dy = dL/dy and y, the slope dz = dy act'(y)
/// is applied where dz is staged, and never stored. The weight gradient
/// dW = dz^T x sums over the examples: blocks sum kDenseRowsPerSlice examples
/// each into a slice of partial sums, which the update adds (Task 8.7). The
/// input gradient dx = dz W sums over the outputs, which one block covers.
/// Both parts run in one launch.
#pragma once

#include "08_fused/dense_fused.hpp"
#include "08_fused/fused_common.cuh"

namespace course {

/// Loads each thread of a dense kernel has in flight while it stages a tile (stage_in_flight). The
/// staging waits on the L2 cache, and the blocks are few: measured on the H100, 8 instead of 4 took
/// the `cnn` from 0.0982 to 0.0954 s an epoch and the `mlp` from 0.0470 to 0.0455 s (lesson 08).
constexpr int kDenseLoadsInFlight = 8;

/// Block `block` of a.blocks of the dense forward pass (layout in DenseForwardArgs).
__device__ inline void dense_forward_tile(const DenseForwardArgs& a, int block, float* smem) {
  // Given: the block's tile and slice of IN, the shared-memory layout, and this thread's row and 4 outputs.
  constexpr int kXPitch = kDenseChunk + 1, kWPitch = kDenseTile + 4;
  __shared__ bool last_block;
  const int tiles = a.row_tiles * a.col_tiles;
  const int tile = block % tiles, k_slice = block / tiles;
  const int n0 = tile / a.col_tiles * kDenseTile, o0 = tile % a.col_tiles * kDenseTile;
  const int k_begin = k_slice * a.k_len, k_end = min(a.IN, k_begin + a.k_len);
  float* xs = smem;                                             // [kDenseTile][kXPitch]: rows n0 ..
  float* ws = smem + round_up_to_4(kDenseTile * kXPitch);       // [kDenseChunk][kWPitch]: W^T, outputs o0 ..
  const int r = static_cast<int>(threadIdx.x) / 8, c4 = static_cast<int>(threadIdx.x) % 8;  // row n0 + r, outputs o0 + 4 c4 ..

  float acc[4] = {0.f, 0.f, 0.f, 0.f};  // this thread's sums of row n0 + r, outputs o0 + 4 c4 .. o0 + 4 c4 + 3

  // BEGIN Task 8.4 (device): over the block's slice [k_begin, k_end) of IN, kDenseChunk columns at a time: stage the tile's rows of x and its outputs' rows of W (transposed), then add into acc[j] the products of row n0 + r and output o0 + 4 c4 + j
  // HINT: pad the staged rows of x to kDenseChunk + 1 floats and store W^T as [k][kDenseTile + 4], so that a warp's reads of x fall in different banks and its 4 outputs are one aligned float4.
  // HINT: stage_in_flight (fused_common.cuh) keeps kDenseLoadsInFlight loads of each thread in flight; rows past B and outputs past OUT stage 0.
  for (int k0 = k_begin; k0 < k_end; k0 += kDenseChunk) {
    const int kn = min(kDenseChunk, k_end - k0);
    __syncthreads();  // every thread is done with the previous chunk
    stage_in_flight<kDenseLoadsInFlight>(
        kDenseTile * kn,
        [&](int i) {
          const int row = i / kn, k = i % kn;
          return make_float2(n0 + row < a.B ? a.x[static_cast<long>(n0 + row) * a.IN + k0 + k] : 0.f,
                             o0 + row < a.OUT ? a.w[static_cast<long>(o0 + row) * a.IN + k0 + k] : 0.f);
        },
        [&](int i, float2 v) {
          const int row = i / kn, k = i % kn;
          xs[row * kXPitch + k] = v.x;
          ws[k * kWPitch + row] = v.y;
        });
    __syncthreads();
    const float* xr = xs + r * kXPitch;
    const float4* wc = reinterpret_cast<const float4*>(ws) + c4;
#pragma unroll 4
    for (int k = 0; k < kn; ++k) {
      const float xv = xr[k];
      const float4 wv = wc[k * (kWPitch / 4)];
      acc[0] += xv * wv.x;
      acc[1] += xv * wv.y;
      acc[2] += xv * wv.z;
      acc[3] += xv * wv.w;
    }
  }
  // END Task 8.4

  const int n = n0 + r;
  // BEGIN Task 8.4 (device): with one slice, add the bias, apply the activation, write y and return; with several, write this slice's partial sums, make them visible, and take the tile's ticket: last_block, for every thread of the block, is whether it drew the last one
  // HINT: __threadfence() after writing the partial sums and before the ticket (atomicAdd on counters[tile], an integer: exact in any order).
  if (a.k_slices == 1) {  // the whole sum is here: finish at once
    if (n < a.B)
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int o = o0 + 4 * c4 + j;
        if (o < a.OUT) a.y[static_cast<long>(n) * a.OUT + o] = fused_activate(a.act, acc[j] + a.b[o]);
      }
    return;
  }
  if (n < a.B)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int o = o0 + 4 * c4 + j;
      if (o < a.OUT) a.partials[(static_cast<long>(k_slice) * a.B + n) * a.OUT + o] = acc[j];
    }
  __threadfence();  // this thread's partial sums are visible everywhere before the block takes its ticket
  __syncthreads();
  if (threadIdx.x == 0) last_block = atomicAdd(&a.counters[tile], 1u) == static_cast<unsigned>(a.k_slices - 1);
  __syncthreads();
  // END Task 8.4
  if (!last_block) return;  // the block that drew the tile's last ticket finishes it

  // BEGIN Task 8.4 (device): the tile's last block: add the slices' partial sums of row n and its 4 outputs in slice order 0, 1, 2, ..., add the bias, apply the activation, write y, and put the tile's counter back to 0 for the next launch
  // HINT: fence again, then read the partials with __ldcg (past the L1 cache, which is not kept coherent between multiprocessors); load 8 slices (one float4 each) before adding them, so that their loads are in flight together.
  __threadfence();
  if (n < a.B) {
    // The slices in order 0, 1, 2, ...; many at a time, so that their loads are in flight
    // together (each waits for the L2 cache; in a plain loop one by one). When OUT is a
    // multiple of 4, a thread's 4 sums of one slice are one aligned float4: 8 slices, 8 loads.
    const int o_first = o0 + 4 * c4;
    const float* p = a.partials + static_cast<long>(n) * a.OUT + o_first;
    const long slice_stride = static_cast<long>(a.B) * a.OUT;
    float sum[4] = {0.f, 0.f, 0.f, 0.f};
    int s = 0;
    if (a.OUT % 4 == 0 && o_first < a.OUT && reinterpret_cast<unsigned long long>(a.partials) % 16 == 0)
      for (; s + 8 <= a.k_slices; s += 8) {
        float4 v[8];
#pragma unroll
        for (int u = 0; u < 8; ++u) v[u] = __ldcg(reinterpret_cast<const float4*>(p + (s + u) * slice_stride));
#pragma unroll
        for (int u = 0; u < 8; ++u) {
          sum[0] += v[u].x;
          sum[1] += v[u].y;
          sum[2] += v[u].z;
          sum[3] += v[u].w;
        }
      }
    for (; s + 4 <= a.k_slices; s += 4) {
      float v[4][4];
#pragma unroll
      for (int u = 0; u < 4; ++u)
#pragma unroll
        for (int j = 0; j < 4; ++j) v[u][j] = o_first + j < a.OUT ? __ldcg(p + (s + u) * slice_stride + j) : 0.f;
#pragma unroll
      for (int u = 0; u < 4; ++u)
#pragma unroll
        for (int j = 0; j < 4; ++j) sum[j] += v[u][j];
    }
    for (; s < a.k_slices; ++s)
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (o_first + j < a.OUT) sum[j] += __ldcg(p + s * slice_stride + j);
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (o_first + j < a.OUT) a.y[static_cast<long>(n) * a.OUT + o_first + j] = fused_activate(a.act, sum[j] + a.b[o_first + j]);
  }
  if (threadIdx.x == 0) a.counters[tile] = 0u;  // ready for the next launch
  // END Task 8.4
}

/// Weight-gradient block `block` of a.weight_blocks: a tile of dW (and db) over one slice of examples.
__device__ inline void dense_weight_gradient_tile(const DenseBackwardArgs& a, int block, float* smem) {
  // BEGIN Task 8.5 (device): stage dz = dy act'(y) for the slice's examples and the tile's outputs, and x for the tile's inputs; each thread sums dz * x over the slice for one output and 4 inputs; the blocks of input tile 0 also sum dz into db; write slice `slice` of the partial sums
  constexpr int kXPitch = kDenseTile + 4;
  const int i_tile = block % a.i_tiles, o_tile = block / a.i_tiles % a.o_tiles, slice = block / (a.i_tiles * a.o_tiles);
  const int i0 = i_tile * kDenseTile, o0 = o_tile * kDenseTile, n0 = slice * kDenseRowsPerSlice;
  const int rows = min(kDenseRowsPerSlice, a.B - n0);
  float* dzs = smem;                                  // [kDenseRowsPerSlice][kDenseTile]
  float* xs = smem + kDenseRowsPerSlice * kDenseTile;  // [kDenseRowsPerSlice][kXPitch]
  stage_in_flight<kDenseLoadsInFlight>(
      rows * kDenseTile,
      [&](int i) {
        const int row = i / kDenseTile, c = i % kDenseTile;
        const long n = n0 + row;
        return make_float2(o0 + c < a.OUT ? a.dy[n * a.OUT + o0 + c] * fused_slope(a.act, a.y[n * a.OUT + o0 + c]) : 0.f,
                           i0 + c < a.IN ? a.x[n * a.IN + i0 + c] : 0.f);
      },
      [&](int i, float2 v) {
        dzs[i] = v.x;
        xs[i / kDenseTile * kXPitch + i % kDenseTile] = v.y;
      });
  __syncthreads();
  const int o = static_cast<int>(threadIdx.x) / 8, c4 = static_cast<int>(threadIdx.x) % 8;  // output o0 + o, inputs i0 + 4 c4 ..
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll 4
  for (int row = 0; row < rows; ++row) {
    const float dz = dzs[row * kDenseTile + o];
    const float4 xv = reinterpret_cast<const float4*>(xs + row * kXPitch)[c4];
    acc[0] += dz * xv.x;
    acc[1] += dz * xv.y;
    acc[2] += dz * xv.z;
    acc[3] += dz * xv.w;
  }
  if (o0 + o < a.OUT)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int i = i0 + 4 * c4 + j;
      if (i < a.IN) a.dw_partials[(static_cast<long>(slice) * a.OUT + o0 + o) * a.IN + i] = acc[j];
    }
  if (i_tile == 0 && static_cast<int>(threadIdx.x) < kDenseTile && o0 + static_cast<int>(threadIdx.x) < a.OUT) {
    float sum = 0.f;
    for (int row = 0; row < rows; ++row) sum += dzs[row * kDenseTile + threadIdx.x];
    a.db_partials[static_cast<long>(slice) * a.OUT + o0 + threadIdx.x] = sum;
  }
  // END Task 8.5
}

/// Input-gradient block `block` of a.input_blocks: a kDenseTile x kDenseTile tile of dx.
__device__ inline void dense_input_gradient_tile(const DenseBackwardArgs& a, int block, float* smem) {
  // BEGIN Task 8.5 (device): for kDenseTile outputs at a time, stage dz = dy act'(y) for the tile's rows and W for the tile's inputs; each thread sums dz * W over every output for one row and 4 inputs, then writes dx
  constexpr int kDzPitch = kDenseTile + 1, kWPitch = kDenseTile + 4;
  const int i_tile = block % a.i_tiles, n_tile = block / a.i_tiles;
  const int i0 = i_tile * kDenseTile, n0 = n_tile * kDenseTile;
  float* dzs = smem;                                        // [kDenseTile rows][kDzPitch]
  float* ws = smem + round_up_to_4(kDenseTile * kDzPitch);  // [kDenseTile outputs][kWPitch]
  const int r = static_cast<int>(threadIdx.x) / 8, c4 = static_cast<int>(threadIdx.x) % 8;  // row n0 + r, inputs i0 + 4 c4 ..
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  for (int o0 = 0; o0 < a.OUT; o0 += kDenseTile) {
    __syncthreads();  // every thread is done with the previous outputs
    stage_in_flight<kDenseLoadsInFlight>(
        kDenseTile * kDenseTile,
        [&](int i) {
          const int row = i / kDenseTile, c = i % kDenseTile;
          const long n = n0 + row;
          return make_float2(n < a.B && o0 + c < a.OUT
                                 ? a.dy[n * a.OUT + o0 + c] * fused_slope(a.act, a.y[n * a.OUT + o0 + c])
                                 : 0.f,
                             o0 + row < a.OUT && i0 + c < a.IN ? a.w[static_cast<long>(o0 + row) * a.IN + i0 + c] : 0.f);
        },
        [&](int i, float2 v) {
          const int row = i / kDenseTile, c = i % kDenseTile;
          dzs[row * kDzPitch + c] = v.x;
          ws[row * kWPitch + c] = v.y;
        });
    __syncthreads();
    for (int c = 0; c < kDenseTile; ++c) {
      const float dz = dzs[r * kDzPitch + c];
      const float4 wv = reinterpret_cast<const float4*>(ws + c * kWPitch)[c4];
      acc[0] += dz * wv.x;
      acc[1] += dz * wv.y;
      acc[2] += dz * wv.z;
      acc[3] += dz * wv.w;
    }
  }
  const int n = n0 + r;
  if (n < a.B)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int i = i0 + 4 * c4 + j;
      if (i < a.IN) a.dx[static_cast<long>(n) * a.IN + i] = acc[j];
    }
  // END Task 8.5
}

/// Block `block` of the dense backward kernel: the weight-gradient part first, then the input-gradient part.
__device__ inline void dense_backward_tile(const DenseBackwardArgs& a, int block, float* smem) {
  if (block < a.weight_blocks)
    dense_weight_gradient_tile(a, block, smem);
  else
    dense_input_gradient_tile(a, block - a.weight_blocks, smem);
}

}  // namespace course
