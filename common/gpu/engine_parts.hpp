/// @file engine_parts.hpp
/// @brief Every piece a GPU engine of its own needs, in one include (given code).
///
/// - DeviceDataset and upload_once(): a data set copied to the device once per
///   run, recognised again by a fingerprint, its labels checked first (device_dataset.hpp);
/// - ParamLayout: the parameters' names and shapes in model order (param_layout.hpp);
/// - GpuProfiler: --profile's CUDA events around each layer's work (gpu_profiler.hpp);
/// - DeviceSums, DeviceLossSlots and train_epoch_in_batches(): an epoch's sums on the
///   device and the NaN check a few steps late (device_sums.hpp);
/// - DeviceEpoch: an epoch whose batches the device gathers by a step counter (device_epoch.hpp);
/// - GradientRange and GradientSync: where data parallelism hooks its all-reduce (gradient_sync.hpp).
///
/// GpuEngine (gpu_engine.hpp) is built from them; an engine that runs its own loop includes this.
#pragma once

#include "common/gpu/device_dataset.hpp"
#include "common/gpu/device_epoch.hpp"
#include "common/gpu/device_sums.hpp"
#include "common/gpu/gpu_profiler.hpp"
#include "common/gpu/gradient_sync.hpp"
#include "common/gpu/param_layout.hpp"
