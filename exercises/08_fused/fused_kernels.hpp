/// @file fused_kernels.hpp
/// @brief Stage 08: the index of the fused kernels: every kernel's header, the phase list and the persistent kernel.
///
/// A stage 08 training step runs a handful of kernels, each doing the work of
/// several layers of stages 05 and 06:
///
/// | kernel (launcher)              | does the work of                                                  | task     |
/// |--------------------------------|-------------------------------------------------------------------|----------|
/// | conv_block_forward_gpu         | conv (stride 1) + bias + activation + max-pool Q x Q, stride Q     | 8.1      |
/// | conv_block_backward_gpu        | pool backward + activation slope + bias and weight gradients; the input gradient | 8.2, 8.3 |
/// | dense_forward_gpu              | dense + bias + activation (split-K, finished by the last block)    | 8.4      |
/// | dense_backward_gpu             | activation slope + weight, bias and input gradients                | 8.5      |
/// | softmax_head_gpu               | the last dense layer + softmax cross-entropy, both ways            | 8.6      |
/// | sgd_multi_tensor_gpu           | the end of every weight-gradient sum + SGD with momentum, all tensors | 8.7   |
/// | persistent_step_gpu            | all of the above in one launch, phases apart by grid.sync()        | 8.8      |
/// | dense_chain_gpu                | an all-dense model's forward, loss and input gradients, in clusters | given   |
/// | dense_chain_update_gpu         | its weight gradients, each summed whole, and SGD                   | given    |
///
/// Every kernel runs blocks of kFusedThreads threads, and every kernel's work
/// is a __device__ function of (its arguments, a block index, its shared
/// memory). A `__global__` wrapper passes blockIdx.x; the persistent kernel
/// passes virtual block indices, one phase after another. The arguments are
/// plain structs, made on the host by a planner that cuts the work into
/// blocks (how many images, filters and channels each block takes, how much
/// shared memory it needs) and read by the device function: the planner and
/// the device function of a task are written together.
///
/// Layouts are stage 02's (NCHW, weights [F, C, K, K]) and stage 01's (dense
/// weights [OUT, IN], activations [B, D]). Everything is device memory.
///
/// **Partial sums.** A weight gradient sums over the whole batch. The backward
/// kernels leave that sum in `slices` partial sums per weight, one per group of
/// examples, each added up in a fixed order by one thread: `dw_partials` holds
/// [slices][F][C][K][K] (conv) or [slices][OUT][IN] (dense), `db_partials`
/// [slices][F]. The update kernel (Task 8.7) adds the slices, in order, as it
/// applies SGD. No float is ever added with an atomic: the same inputs give the
/// same bits every run.
///
/// **Where each kernel lives.** A kernel's argument struct, its planner and its
/// launcher are declared in its own header, beside the kernel (the device code
/// in the .cuh, the planner and the launcher in the .cu):
///
/// | header                   | kernels                                              |
/// |--------------------------|------------------------------------------------------|
/// | fused_common.hpp         | kFusedThreads, the shared-memory budget, FusedAct, FusedLoss, KernelTraffic |
/// | conv_block_shape.hpp     | ConvBlockShape, which both conv kernels take         |
/// | conv_block_forward.hpp   | conv_block_forward_gpu                               |
/// | conv_block_backward.hpp  | conv_block_backward_gpu                              |
/// | dense_fused.hpp          | dense_forward_gpu, dense_backward_gpu                |
/// | softmax_xent.hpp         | softmax_head_gpu                                     |
/// | sgd_multi_tensor.hpp     | sgd_multi_tensor_gpu                                 |
/// | dense_chain.hpp          | dense_chain_gpu, dense_chain_update_gpu              |
/// | batch_gather.hpp         | the batch gather as a phase (stage 06's kernel)      |
/// | fused_phases.hpp         | the phase list, FusedPhase, launch_phase             |
/// | persistent_step.hpp      | persistent_step_gpu                                  |
///
/// This header includes them all.
#pragma once

#include "08_fused/batch_gather.hpp"
#include "08_fused/conv_block_backward.hpp"
#include "08_fused/conv_block_forward.hpp"
#include "08_fused/conv_block_shape.hpp"
#include "08_fused/dense_chain.hpp"
#include "08_fused/dense_fused.hpp"
#include "08_fused/fused_common.hpp"
#include "08_fused/fused_phases.hpp"
#include "08_fused/persistent_step.hpp"
#include "08_fused/sgd_multi_tensor.hpp"
#include "08_fused/softmax_xent.hpp"
