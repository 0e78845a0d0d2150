/// @file conv_gpu.cu
/// @brief Stage 05 (Tasks 5.3 to 5.6): conv forward, input, weight and bias gradients as im2col + GEMMs.
///
/// Every GEMM is stage 04's gemm() (gemm.hpp: row-major, op(X) = X or X^T by a
/// flag, never a transposed copy), with the kernel the context names. The
/// layouts and the three products are in conv_gpu.hpp; in gemm() terms:
///
/// | product                    | Unroll::Image, per image n              | Unroll::Batch                              |
/// |----------------------------|-----------------------------------------|--------------------------------------------|
/// | y = W U^T                  | gemm(N, T) C_out x P x R -> y[n]        | gemm(N, T) B*P x C_out x R -> Ypix, reorder |
/// | dU = dy^T W                | gemm(T, N) P x R x C_out                | gemm(N, N) B*P x R x C_out on dYpix        |
/// | dW = dy U                  | gemm(N, N) C_out x R x P, beta 1 if n>0 | split-K of dYpix^T U, C_out x R x B*P      |
///
/// (M x N x K of each product; (N, T) = (trans_a false, trans_b true).)
#include <stdexcept>
#include <string>

#include "04_cuda_matmul/gemm.hpp"
#include "04_cuda_matmul/mlp_kernels.hpp"
#include "05_im2col_gemm/arg_checks.hpp"
#include "05_im2col_gemm/conv_gpu.hpp"
#include "05_im2col_gemm/im2col.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

namespace {

/// Threads per block of the bias-gradient reduction: a power of two (the tree halves it).
constexpr int kReduceThreads = 1024;

/// Throws std::invalid_argument when ctx cannot run a batch of B on g.
void check_context(const ConvContext& ctx, int B, const ConvGeometry& g, const char* function) {
  g.check();
  require_batch(B, function);
  const std::size_t need = conv_workspace_floats(ctx, B, g);
  if (ctx.workspace_floats < need || (need > 0 && ctx.workspace == nullptr))
    throw std::invalid_argument(std::string(function) + ": " + g.str() + " at batch " + std::to_string(B) +
                                " with unroll " + unroll_name(ctx.unroll) + " needs a workspace of " +
                                std::to_string(need) + " floats, got " + std::to_string(ctx.workspace_floats));
}

}  // namespace

// ---- reorders between NCHW and pixel-major (glue for Unroll::Batch) ----------------

/// y[n][c][p] = Ypix[n*P + p][c] + bias[c] (bias may be null): [B*P, C] -> [B, C, P].
/// One thread per element of y, so the writes are coalesced; the reads of a warp
/// take one or two pixels' rows of C values, which the cache serves.
__global__ void pixels_to_channels_kernel(const float* __restrict__ Ypix, const float* __restrict__ bias,
                                          float* __restrict__ y, int B, int C, int P) {
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<long>(B) * C * P) return;
  const int p = static_cast<int>(i % P), c = static_cast<int>((i / P) % C);
  const long n = i / (static_cast<long>(P) * C);
  y[i] = Ypix[(n * P + p) * C + c] + (bias != nullptr ? bias[c] : 0.f);
}

/// Ypix[n*P + p][c] = y[n][c][p]: [B, C, P] -> [B*P, C]; one thread per element of Ypix.
__global__ void channels_to_pixels_kernel(const float* __restrict__ y, float* __restrict__ Ypix, int B, int C, int P) {
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<long>(B) * C * P) return;
  const int c = static_cast<int>(i % C), p = static_cast<int>((i / C) % P);
  const long n = i / (static_cast<long>(C) * P);
  Ypix[i] = y[(n * C + c) * P + p];
}

// Not in an anonymous namespace: on the exercise track nothing calls them until
// Tasks 5.3 to 5.5 are done, and an unused internal function draws a warning.
void pixels_to_channels(const float* Ypix, const float* bias, float* y, int B, int C, int P, cudaStream_t stream) {
  const long n = static_cast<long>(B) * C * P;
  pixels_to_channels_kernel<<<blocks_for(n), kElementwiseThreads, 0, stream>>>(Ypix, bias, y, B, C, P);
  CUDA_CHECK_LAUNCH();
}

void channels_to_pixels(const float* y, float* Ypix, int B, int C, int P, cudaStream_t stream) {
  const long n = static_cast<long>(B) * C * P;
  channels_to_pixels_kernel<<<blocks_for(n), kElementwiseThreads, 0, stream>>>(y, Ypix, B, C, P);
  CUDA_CHECK_LAUNCH();
}

// ---- workspace -------------------------------------------------------------------------

const char* unroll_name(Unroll u) { return u == Unroll::Image ? "image" : "batch"; }

Unroll parse_unroll(const std::string& name) {
  if (name == "image") return Unroll::Image;
  if (name == "batch") return Unroll::Batch;
  throw std::invalid_argument("unknown unroll '" + name + "': expected image or batch");
}

ConvWorkspaceLayout conv_workspace_layout(Unroll unroll, int B, const ConvGeometry& g, int split_chunks) {
  const std::size_t P = static_cast<std::size_t>(g.out_h()) * g.out_w(), R = static_cast<std::size_t>(patch_size(g));
  ConvWorkspaceLayout l;
  if (unroll == Unroll::Image) {
    l.unrolled = P * R;
    return l;
  }
  l.unrolled = static_cast<std::size_t>(B) * P * R;
  l.pixels = static_cast<std::size_t>(B) * P * static_cast<std::size_t>(g.C_out);
  if (split_chunks > 1) l.partials = static_cast<std::size_t>(split_chunks) * static_cast<std::size_t>(g.C_out) * R;
  return l;
}

int conv_split_chunks(const ConvContext& ctx, int B, const ConvGeometry& g) {
  if (ctx.unroll == Unroll::Image || ctx.split_k == nullptr) return 1;
  return split_k_chunks(ctx.gemm_kernel, unrolled_rows(B, g), ctx.split_k->max_chunks());
}

std::size_t conv_workspace_floats(const ConvContext& ctx, int B, const ConvGeometry& g) {
  return conv_workspace_layout(ctx.unroll, B, g, conv_split_chunks(ctx, B, g)).total();
}

namespace {
/// The pieces of ctx's workspace for a batch of B (conv_workspace_layout), as pointers.
struct Scratch {
  float* unrolled;  ///< U, or dU: [P, R] (Image) or [B*P, R] (Batch)
  float* pixels;    ///< Batch: Ypix or dYpix [B*P, C_out]
  float* partials;  ///< Batch with split-K: chunks x [C_out, R]
  int chunks;       ///< split-K chunks of the weight gradient (1: one GEMM)
};

Scratch scratch(const ConvContext& ctx, int B, const ConvGeometry& g) {
  const int chunks = conv_split_chunks(ctx, B, g);
  const ConvWorkspaceLayout l = conv_workspace_layout(ctx.unroll, B, g, chunks);
  return {ctx.workspace, ctx.workspace + l.unrolled, ctx.workspace + l.unrolled + l.pixels, chunks};
}
}  // namespace

// ---- Task 5.3: forward -----------------------------------------------------------------

/// y[n][c][p] += b[c] for every element of y [B, C, P].
__global__ void add_channel_bias_kernel(float* __restrict__ y, const float* __restrict__ b, int B, int C, int P) {
  // TODO(Task 5.3): one thread per element i of y [B, C, P]: add the bias of its channel, c = (i / P) % C
}

void conv_forward_gpu(const ConvContext& ctx, const float* x, const float* W, const float* b, float* y, int B,
                      const ConvGeometry& g) {
  check_context(ctx, B, g, "conv_forward_gpu");
  require_pointers("conv_forward_gpu", {{x, "x"}, {W, "W"}, {b, "b"}, {y, "y"}});
  const Scratch ws = scratch(ctx, B, g);
  const int P = g.out_h() * g.out_w(), R = patch_size(g);
  // TODO(Task 5.3): conv forward: Image: for each n, im2col of x[n] into U, then y[n] = W U^T (gemm with trans_b), then one bias kernel; Batch: im2col of the batch, Ypix = U W^T, then pixels_to_channels(Ypix, b, y)
  // HINT: x[n] starts at x + n * g.in_size(), y[n] at y + n * g.out_size(); U is ws.unrolled, Ypix is ws.pixels.
  // HINT: W [C_out, R] is op(A) as stored, U [P, R] is op(B) with trans_b; Batch: gemm(k, false, true, B*P, C_out, R, 1, U, W, 0, Ypix, s).
  throw course::NotImplemented("Task 5.3", "05_im2col_gemm/conv_gpu.cu", "docs/lessons/05_im2col_gemm.md");
}

// ---- Task 5.4: input gradient ------------------------------------------------------------

void conv_backward_input_gpu(const ConvContext& ctx, const float* dy, const float* W, float* dx, int B,
                             const ConvGeometry& g) {
  check_context(ctx, B, g, "conv_backward_input_gpu");
  require_pointers("conv_backward_input_gpu", {{dy, "dy"}, {W, "W"}, {dx, "dx"}});
  const Scratch ws = scratch(ctx, B, g);
  const int P = g.out_h() * g.out_w(), R = patch_size(g);
  // TODO(Task 5.4): conv input gradient: each patch's gradient dU = dy^T W (a GEMM), then col2im adds every patch's share back into dx; per image (Image) or for the whole batch on dYpix (Batch)
  // HINT: Image: dy[n] is stored [C_out, P], so dy[n]^T is op(A) with trans_a: gemm(k, true, false, P, R, C_out, 1, dy[n], W, 0, dU, s), then col2im_gpu(dU, 1, g, dx[n], s).
  // HINT: Batch: channels_to_pixels(dy, dYpix, B, C_out, P, s) first (dYpix is ws.pixels); then dU = dYpix W is a GEMM without transposes.
  throw course::NotImplemented("Task 5.4", "05_im2col_gemm/conv_gpu.cu", "docs/lessons/05_im2col_gemm.md");
}

// ---- Task 5.5: weight gradient -------------------------------------------------------------

void conv_backward_weight_gpu(const ConvContext& ctx, const float* x, const float* dy, float* dW, int B,
                              const ConvGeometry& g) {
  check_context(ctx, B, g, "conv_backward_weight_gpu");
  require_pointers("conv_backward_weight_gpu", {{x, "x"}, {dy, "dy"}, {dW, "dW"}});
  const Scratch ws = scratch(ctx, B, g);
  const int P = g.out_h() * g.out_w(), R = patch_size(g);
  // TODO(Task 5.5): conv weight gradient dW = sum over the batch of dy U: Image: im2col of x[n], then dW += dy[n] U_n (beta 0 for the first image, 1 after); Batch: im2col of the batch, dYpix, then dW = dYpix^T U in split-K chunks
  // HINT: Image: gemm(k, false, false, C_out, R, P, 1, dy[n], U, n == 0 ? 0 : 1, dW, s).
  // HINT: Batch: with ctx.split_k, ctx.split_k->run(k, C_out, R, B*P, dYpix, U, dW, ws.chunks, ws.partials, s); without, one gemm(k, true, false, ...).
  throw course::NotImplemented("Task 5.5", "05_im2col_gemm/conv_gpu.cu", "docs/lessons/05_im2col_gemm.md");
}

// ---- Task 5.6: bias gradient -----------------------------------------------------------------

/// db[c] = sum over n and p of dy[n][c][p]; block c reduces channel c.
__global__ void __launch_bounds__(kReduceThreads) conv_bias_grad_kernel(const float* __restrict__ dy,
                                                                         float* __restrict__ db, int B, int C, int P) {
  // TODO(Task 5.6): one block per channel c: each thread sums a strided share of the B*P values of channel c (four loads in flight), then the block adds its threads' sums in a shared-memory tree and thread 0 writes db[c]
  // HINT: value j of channel c (j = n*P + p) is dy[(n*C + c)*P + p]; the tree: for (half = blockDim.x / 2; half > 0; half /= 2) { if (t < half) sums[t] += sums[t + half]; __syncthreads(); }
}

void conv_backward_bias_gpu(const float* dy, float* db, int B, const ConvGeometry& g, cudaStream_t stream) {
  g.check();
  require_batch(B, "conv_backward_bias_gpu");
  require_pointers("conv_backward_bias_gpu", {{dy, "dy"}, {db, "db"}});
  // TODO(Task 5.6): launch conv_bias_grad_kernel with one block of kReduceThreads threads per output channel
  throw course::NotImplemented("Task 5.6", "05_im2col_gemm/conv_gpu.cu", "docs/lessons/05_im2col_gemm.md");
}

}  // namespace course
