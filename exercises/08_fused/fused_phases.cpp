/// @file fused_phases.cpp
/// @brief Stage 08: what the phase list (fused_phases.hpp) gives every phase alike: blocks, shared memory, launch, traffic (glue, not a task).
#include "08_fused/fused_phases.hpp"

namespace course {

// Each function is one switch over the kinds of both lists; a table phase's arguments sit in the
// FusedPhase, a cluster phase's behind its pointer.

int phase_blocks(const FusedPhase& p) {
  switch (p.kind) {
#define COURSE_TABLE_CASE(kind, member, ...) \
  case PhaseKind::kind: return phase_blocks(p.member);
#define COURSE_CLUSTER_CASE(kind, member, ...) \
  case PhaseKind::kind: return phase_blocks(*p.member);
    COURSE_TABLE_PHASES(COURSE_TABLE_CASE)
    COURSE_CLUSTER_PHASES(COURSE_CLUSTER_CASE)
#undef COURSE_TABLE_CASE
#undef COURSE_CLUSTER_CASE
  }
  return 0;
}

int phase_smem_bytes(const FusedPhase& p) {
  switch (p.kind) {
#define COURSE_TABLE_CASE(kind, member, ...) \
  case PhaseKind::kind: return phase_smem_bytes(p.member);
#define COURSE_CLUSTER_CASE(kind, member, ...) \
  case PhaseKind::kind: return phase_smem_bytes(*p.member);
    COURSE_TABLE_PHASES(COURSE_TABLE_CASE)
    COURSE_CLUSTER_PHASES(COURSE_CLUSTER_CASE)
#undef COURSE_TABLE_CASE
#undef COURSE_CLUSTER_CASE
  }
  return 0;
}

void launch_phase(const FusedPhase& p, cudaStream_t stream, bool early) {
  switch (p.kind) {
#define COURSE_TABLE_CASE(kind, member, Args, launcher, ...) \
  case PhaseKind::kind: launcher(p.member, stream, early); break;
#define COURSE_CLUSTER_CASE(kind, member, Args, launcher, ...) \
  case PhaseKind::kind: launcher(*p.member, stream, early); break;
    COURSE_TABLE_PHASES(COURSE_TABLE_CASE)
    COURSE_CLUSTER_PHASES(COURSE_CLUSTER_CASE)
#undef COURSE_TABLE_CASE
#undef COURSE_CLUSTER_CASE
  }
}

KernelTraffic phase_traffic(const FusedPhase& p) {
  switch (p.kind) {
#define COURSE_TABLE_CASE(kind, member, ...) \
  case PhaseKind::kind: return phase_traffic(p.member);
#define COURSE_CLUSTER_CASE(kind, member, ...) \
  case PhaseKind::kind: return phase_traffic(*p.member);
    COURSE_TABLE_PHASES(COURSE_TABLE_CASE)
    COURSE_CLUSTER_PHASES(COURSE_CLUSTER_CASE)
#undef COURSE_TABLE_CASE
#undef COURSE_CLUSTER_CASE
  }
  return {};
}

}  // namespace course
