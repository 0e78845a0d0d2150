/// @file cudnn_check.hpp
/// @brief The cuDNN error check (stage 06): names the call, the file and the line.
#pragma once

#include <cudnn.h>

#include "common/gpu/cuda_check.hpp"

/// Checks a cuDNN call: CUDNN_CHECK(cudnnConvolutionForward(...)).
#define CUDNN_CHECK(call) COURSE_STATUS_CHECK(#call, call, CUDNN_STATUS_SUCCESS, cudnnGetErrorString)
