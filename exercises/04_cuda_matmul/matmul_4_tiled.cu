/// @file matmul_4_tiled.cu
/// @brief Stage 04, kernels 4 and 5 (Task 4.4): shared-memory tiles sweeping K.
///
/// In kernel 3 every thread reads a whole row of op(A) and a whole column of
/// op(B) from global memory: each input element is fetched M or N times.
/// Here a block of TILE x TILE threads computes one TILE x TILE tile of C and
/// walks along K one tile at a time:
///
///            K ->                      N ->
///     op(A) [ .. | As | .. ]    op(B) [    :    ]        C [    :    ]
///                                     [ -- Bs - ]  k0      [ -- Ct - ]  row0
///                                     [    :    ]          [    :    ]
///                                         col0                 col0
///
/// 1. every thread copies one element of the A tile (rows row0.., columns k0..)
///    and one of the B tile (rows k0.., columns col0..) into shared memory;
/// 2. __syncthreads(): no thread may read the tiles before all are written;
/// 3. every thread adds TILE products As[ty][k] * Bs[k][tx] to its sum, read
///    from shared memory, which is on the chip;
/// 4. __syncthreads() again: no thread may overwrite the tiles for the next k0
///    while another still reads them.
///
/// Each element is now fetched from global memory M / TILE or N / TILE times
/// instead of M or N times. Parts of a tile that hang over the edge of A or B
/// are filled with zeros, which add nothing to the sum; threads whose output is
/// outside C still load and synchronise (a __syncthreads() that some threads of
/// the block never reach is undefined behaviour), they only skip the store.
///
/// Loads stay coalesced for transposed operands too: for each operand the
/// thread with the next threadIdx.x loads the element with the next address.
/// A transposed operand is then written into its tile column-wise, and padding
/// at the end of each tile row moves those writes onto different shared-memory
/// banks (4 bytes each, 32 of them; elements 32 floats apart share a bank). Bs
/// gets 1 float: a column write then touches 32 different banks. As gets 4, so
/// that its rows stay 16-byte aligned: all threads of a warp read the same row
/// of As, and the compiler reads 4 of its values at once (one LDS.128 instead
/// of four LDS.32); a column write then shares each bank between 4 threads.
///
/// TILE is a template parameter: kernel 4 is TILE = 16 (256 threads a block),
/// kernel 5 TILE = 32 (1024 threads, the most a block may hold).
#include "04_cuda_matmul/matmul_kernels.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

/// Launched as TILE x TILE threads per block, one block per TILE x TILE tile of C:
/// thread (tx, ty) of block (bx, by) computes C[by * TILE + ty][bx * TILE + tx].
template <int TILE>
__global__ void matmul_tiled_kernel(GemmProblem p) {
  // TODO(Task 4.4): load a TILE x TILE tile of op(A) and of op(B) into shared memory (zeros outside), __syncthreads, accumulate TILE products, __syncthreads, next tile
  // HINT: As[i][j] = op(A)[row0 + i][k0 + j], Bs[i][j] = op(B)[k0 + i][col0 + j]; no thread may return before the last __syncthreads.
}

template <int TILE>
void launch_tiled(const GemmProblem& p, cudaStream_t stream) {
  // TODO(Task 4.4): launch TILE x TILE threads per block and one block per tile of C
  // HINT: grid x covers the columns, (p.N + TILE - 1) / TILE; grid y the rows.
  throw course::NotImplemented("Task 4.4", "04_cuda_matmul/matmul_4_tiled.cu", "docs/lessons/04_cuda_matmul.md");
}

void matmul_tiled_16(const GemmProblem& p, cudaStream_t stream) { launch_tiled<16>(p, stream); }
void matmul_tiled_32(const GemmProblem& p, cudaStream_t stream) { launch_tiled<32>(p, stream); }

}  // namespace course
