/// @file ptx.cuh
/// @brief Stage 07: the four PTX instructions the fast kernels need that CUDA C++ has no plain syntax for (glue, not a task).
///
/// Each wrapper is one instruction. The lesson explains what they do; here is what they take.
///
/// - `cp.async` (sm_80+): copies 4, 8 or 16 bytes from global to shared memory
///   without passing through registers, and without stalling the thread that
///   issued it. Copies are grouped (`commit_group`) and waited for by group
///   (`wait_group N`: until at most N groups are still in flight). A copy whose
///   source size is 0 reads nothing and writes zeros: that is how the tiles at
///   the edges of a matrix are padded with zeros.
/// - `ldmatrix` (sm_75+): the 32 threads of a warp load four 8 x 8 matrices of
///   16-bit values from shared memory straight into the register layout the
///   tensor-core instruction wants. Thread l gives the address of row l % 8 of
///   matrix l / 8; afterwards register i of thread l holds row l / 4, columns
///   2 (l % 4) and 2 (l % 4) + 1 of matrix i (with `.trans`: column l / 4, rows
///   2 (l % 4) and 2 (l % 4) + 1). Rows are 16 bytes and must be 16-byte aligned.
/// - `mma.sync` (sm_80+ for these shapes): one warp multiplies a 16 x K tile of A by
///   a K x 8 tile of B on the tensor cores and adds the 16 x 8 product to FP32
///   accumulators. Each thread holds a fixed piece of each operand (its
///   "fragment"); with g = lane / 4 and t = lane % 4:
///
///   m16n8k8, TF32 (4-byte elements):
///   | fragment | registers | thread holds                                    |
///   |----------|-----------|-------------------------------------------------|
///   | A 16 x 8 | a[0..3]   | A[g][t], A[g+8][t], A[g][t+4], A[g+8][t+4]      |
///   | B 8 x 8  | b[0..1]   | B[t][g], B[t+4][g]                              |
///   | C 16 x 8 | c[0..3]   | C[g][2t], C[g][2t+1], C[g+8][2t], C[g+8][2t+1]  |
///
///   m16n8k16, BF16 (two 2-byte elements per register, the lower index in the low half):
///   | fragment  | registers | thread holds                                                          |
///   |-----------|-----------|-----------------------------------------------------------------------|
///   | A 16 x 16 | a[0..3]   | A[g][2t..2t+1], A[g+8][2t..2t+1], A[g][2t+8..2t+9], A[g+8][2t+8..2t+9] |
///   | B 16 x 8  | b[0..1]   | B[2t..2t+1][g], B[2t+8..2t+9][g]                                       |
///   | C 16 x 8  | c[0..3]   | as for TF32                                                           |
///
///   The BF16 A fragment is exactly what ldmatrix.x4 returns for the four 8 x 8
///   quarters of a row-major 16 x 16 tile (top left, bottom left, top right,
///   bottom right), which is why the two instructions go together.
///
/// **Older GPUs.** `cp.async` and these `mma` shapes need sm_80; the course also builds for
/// sm_75 (a T4). There, COURSE_DEVICE_ARCH below 800, kernels 9 to 12 leave their bodies out
/// of the build (so nothing asks ptxas for cp.async or mma on sm_75), and course::gemm() never
/// starts them on such a GPU: it runs kernel 8 instead (kernel_that_runs(),
/// common/gpu/gpu_features.def). to_tf32 rounds in software there (the same bits as the instruction).
#pragma once

#include <cuda_runtime.h>

#include "07_fast_gemm/rounding.cuh"

/// The architecture the device code is being compiled for (800 for sm_80), or, in the host
/// pass, a number above every architecture, so that `#if COURSE_DEVICE_ARCH >= 800` keeps
/// kernels declared whole for the host.
#if defined(__CUDA_ARCH__)
#define COURSE_DEVICE_ARCH __CUDA_ARCH__
#else
#define COURSE_DEVICE_ARCH 100000
#endif

namespace course::ptx {

/// Shared-memory address of a pointer into shared memory, as PTX wants it.
__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

/// 16 bytes from `src` (global, 16-byte aligned) to `dst` (shared, 16-byte aligned);
/// zeros instead when `copy` is false (then nothing is read: `src` need only be a valid pointer).
/// `.cg` caches in L2 only: the tile is read once per block, from shared memory afterwards.
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, bool copy) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)), "l"(src),
               "r"(copy ? 16 : 0));
}

/// 4 bytes from `src` (global) to `dst` (shared), or a zero when `copy` is false.
/// (4-byte copies exist only in the `.ca` form, which may also cache in L1.)
__device__ __forceinline__ void cp_async_4(void* dst, const void* src, bool copy) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(shared_address(dst)), "l"(src),
               "r"(copy ? 4 : 0));
}

/// Closes the group of copies this thread issued since the last commit.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

/// Waits until at most `kPending` of this thread's committed groups are still in flight.
/// Only this thread's copies: a __syncthreads() must follow before others read them.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

/// Four 8 x 8 matrices of 16-bit values; `row` is this thread's row address (see the file comment).
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
}

/// The same, each matrix transposed on the way.
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
}

/// x rounded to TF32 (to nearest, ties away from zero: rounding.cuh's round_to_tf32), as the
/// 32-bit pattern mma and wgmma take.
__device__ __forceinline__ unsigned to_tf32(float x) {
#if COURSE_DEVICE_ARCH >= 800
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
#else
  return float_bits(round_to_tf32(x));
#endif
}

/// c += A B for one 16 x 8 x 8 tile in TF32 (the operands' bits: FP32 values already rounded to TF32).
__device__ __forceinline__ void mma_tf32_16x8x8(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/// c += A B for one 16 x 8 x 16 tile in BF16 (two BF16 values per register).
__device__ __forceinline__ void mma_bf16_16x8x16(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

}  // namespace course::ptx
