/// @file cudnn_check.hpp
/// @brief The cuDNN error check (stage 06): names the call, the file and the line.
#pragma once

#include <cudnn.h>

#include "common/gpu/cuda_check.hpp"

/// Checks a cuDNN call: CUDNN_CHECK(cudnnConvolutionForward(...)).
#define CUDNN_CHECK(call)                                                                         \
  do {                                                                                            \
    const cudnnStatus_t course_st_ = (call);                                                      \
    if (course_st_ != CUDNN_STATUS_SUCCESS)                                                       \
      ::course::throw_gpu_error(#call, __FILE__, __LINE__, cudnnGetErrorString(course_st_));      \
  } while (0)
