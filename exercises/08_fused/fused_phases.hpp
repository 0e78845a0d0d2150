/// @file fused_phases.hpp
/// @brief Stage 08: the list of the phases a step is made of, and the table entry (FusedPhase) that holds one (glue, not a task).
///
/// A training step is a list of phases, each one fused kernel with its
/// arguments. Everything that treats phases alike (a phase's blocks and shared
/// memory, its launch on its own, its traffic, and the persistent kernel of
/// Task 8.8, which runs the phases one after another in one launch) reads the
/// two lists below, one row per phase:
///
///     X(kind, member of FusedPhase, argument struct, launcher [, device function of one virtual block])
///
/// A kernel's header declares, beside its argument struct, its planner and its
/// launcher, what these lists read of it: phase_blocks(const Args&) (host and
/// device), phase_smem_bytes(const Args&) and phase_traffic(const Args&). So a
/// new fused kernel is its own files plus one row here.
///
/// - COURSE_TABLE_PHASES: phases the persistent kernel can run. Their arguments
///   sit in the FusedPhase itself, so that a table of phases can be copied to
///   the device as it is; the last column is the __device__ function that runs
///   one virtual block, (const Args&, int block, float* smem).
/// - COURSE_CLUSTER_PHASES: phases launched in thread block clusters, never in
///   the persistent kernel. Their arguments (about 500 bytes each) would make
///   every entry of a table that large: they stay on the host, owned by the
///   engine's plan, and the FusedPhase holds a pointer to them.
#pragma once

#include <cuda_runtime.h>

#include "08_fused/batch_gather.hpp"
#include "08_fused/conv_block_backward.hpp"
#include "08_fused/conv_block_forward.hpp"
#include "08_fused/dense_chain.hpp"
#include "08_fused/dense_fused.hpp"
#include "08_fused/fused_common.hpp"
#include "08_fused/sgd_multi_tensor.hpp"
#include "08_fused/softmax_xent.hpp"

namespace course {

// clang-format off
#define COURSE_TABLE_PHASES(X)                                                                        \
  X(Gather, gather, GatherArgs, batch_gather_gpu, batch_gather_block)                                 \
  X(ConvForward, conv_forward, ConvForwardArgs, conv_block_forward_gpu, conv_block_forward_block)     \
  X(ConvBackward, conv_backward, ConvBackwardArgs, conv_block_backward_gpu, conv_block_backward_block) \
  X(DenseForward, dense_forward, DenseForwardArgs, dense_forward_gpu, dense_forward_tile)             \
  X(DenseBackward, dense_backward, DenseBackwardArgs, dense_backward_gpu, dense_backward_tile)        \
  X(Head, head, HeadArgs, softmax_head_gpu, softmax_head_rows)                                        \
  X(Sgd, sgd, SgdArgs, sgd_multi_tensor_gpu, sgd_multi_tensor_phase_block)

#define COURSE_CLUSTER_PHASES(X)                                                                      \
  X(DenseChain, dense_chain, DenseChainArgs, dense_chain_gpu)                                         \
  X(DenseChainUpdate, dense_chain_update, DenseChainUpdateArgs, dense_chain_update_gpu)
// clang-format on

/// What a phase of a training step is: one kind per row of the lists, in their order.
enum class PhaseKind : int {
#define COURSE_PHASE_KIND(kind, ...) kind,
  COURSE_TABLE_PHASES(COURSE_PHASE_KIND) COURSE_CLUSTER_PHASES(COURSE_PHASE_KIND)
#undef COURSE_PHASE_KIND
};

/// One kernel's worth of a training step: the kernel and its arguments.
struct FusedPhase {
  PhaseKind kind;
  union {
#define COURSE_TABLE_MEMBER(kind, member, Args, ...) Args member;
#define COURSE_CLUSTER_MEMBER(kind, member, Args, ...) const Args* member;
    COURSE_TABLE_PHASES(COURSE_TABLE_MEMBER)
    COURSE_CLUSTER_PHASES(COURSE_CLUSTER_MEMBER)
#undef COURSE_TABLE_MEMBER
#undef COURSE_CLUSTER_MEMBER
  };
};

/// The phase of a kernel's arguments: fused_phase(plan_dense_forward(...)), fused_phase(&chain_args).
#define COURSE_TABLE_MAKER(kind_, member, Args, ...) \
  inline FusedPhase fused_phase(const Args& a) {     \
    FusedPhase p{};                                  \
    p.kind = PhaseKind::kind_;                       \
    p.member = a;                                    \
    return p;                                        \
  }
#define COURSE_CLUSTER_MAKER(kind_, member, Args, ...) \
  inline FusedPhase fused_phase(const Args* a) {       \
    FusedPhase p{};                                    \
    p.kind = PhaseKind::kind_;                         \
    p.member = a;                                      \
    return p;                                          \
  }
COURSE_TABLE_PHASES(COURSE_TABLE_MAKER)
COURSE_CLUSTER_PHASES(COURSE_CLUSTER_MAKER)
#undef COURSE_TABLE_MAKER
#undef COURSE_CLUSTER_MAKER

/// Blocks of a phase of the table (for a backward kernel, both parts): what a launch of the phase's kernel
/// runs, and what the persistent kernel's blocks share out. 0 for a cluster phase, whose arguments are on the
/// host: phase_blocks() reads them there.
__host__ __device__ inline int fused_phase_blocks(const FusedPhase& p) {
  switch (p.kind) {
#define COURSE_TABLE_BLOCKS(kind, member, ...) \
  case PhaseKind::kind: return phase_blocks(p.member);
#define COURSE_CLUSTER_NONE(kind, ...) case PhaseKind::kind:
    COURSE_TABLE_PHASES(COURSE_TABLE_BLOCKS)
    COURSE_CLUSTER_PHASES(COURSE_CLUSTER_NONE) break;
#undef COURSE_TABLE_BLOCKS
#undef COURSE_CLUSTER_NONE
  }
  return 0;
}

/// Blocks and dynamic shared memory of any phase.
int phase_blocks(const FusedPhase& p);
int phase_smem_bytes(const FusedPhase& p);
/// Queues one phase as its own kernel on `stream` (the gather as stage 06's kernel).
void launch_phase(const FusedPhase& p, cudaStream_t stream = 0, bool early = false);
/// The traffic of one phase of a step, from its arguments.
KernelTraffic phase_traffic(const FusedPhase& p);

}  // namespace course
