/// @file nccl_check.hpp
/// @brief The NCCL error check (stage 09): names the call, the file and the line, and NCCL's own account.
///
/// NCCL reports a failure as a code (ncclResult_t: ncclSystemError,
/// ncclInvalidUsage, ncclRemoteError, ...) and keeps a sentence about the last
/// error of the calling thread (ncclGetLastError). NCCL_CHECK puts both in the
/// message of a course::NcclError, after the call as written and where it is:
///
///     ncclCommInitRank(&comm_, world, id, rank) failed at communicator.cpp:88:
///     remote process exited or there was a network error (NCCL: socket ...)
#pragma once

#include <nccl.h>

#include <string>

#include "common/gpu/cuda_check.hpp"

namespace course {

/// A failed NCCL call. A GpuError, so what catches a failed CUDA call catches this too.
class NcclError : public GpuError {
 public:
  using GpuError::GpuError;
};

/// Throws NcclError("<call> failed at <file>:<line>: <ncclGetErrorString> (NCCL: <ncclGetLastError>)").
[[noreturn]] inline void throw_nccl_error(const char* call, const char* file, int line, ncclResult_t result) {
  std::string why = ncclGetErrorString(result);
  const char* last = ncclGetLastError(nullptr);  // this thread's last error; the argument is unused
  if (last != nullptr && last[0] != '\0') why += std::string(" (NCCL: ") + last + ")";
  throw NcclError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " + why);
}

/// "2.28.9" from a version code of ncclGetVersion or NCCL_VERSION_CODE (2.9 and later: 22809).
inline std::string nccl_version_string(int code) {
  if (code < 10000) return std::to_string(code / 1000) + "." + std::to_string(code / 100 % 10) + "." + std::to_string(code % 100);
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
}

}  // namespace course

/// Checks an NCCL call: NCCL_CHECK(ncclAllReduce(...)).
#define NCCL_CHECK(call)                                                           \
  do {                                                                             \
    const ncclResult_t course_nr_ = (call);                                        \
    if (course_nr_ != ncclSuccess) ::course::throw_nccl_error(#call, __FILE__, __LINE__, course_nr_); \
  } while (0)
