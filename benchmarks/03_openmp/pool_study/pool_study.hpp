// The max-pooling study the course grew out of, reproduced (docs/replication.md, experiment E5):
// the time of max-pooling one N x N image of one channel, N = 4 ... 2048, for 2x2 windows at
// stride 2 (k2 s2 p0), overlapping at stride 1 (k2 s1 p0) and padded (k2 s2 p1; k2 s2 p2 is
// refused, as every stage refuses a padding as large as the window: lesson 02), timed
//
//   serial   stage 02's course::maxpool_forward, one thread;
//   study_serial  the study's own method in C++: each window extracted, multiplied by the identity
//            (a matmul per window), its largest cell taken (the study wrote it in Python with NumPy:
//            tools/replicate_lib/pool_numpy.py times that one);
//   openmp   the same loop with its output rows shared among 1, 2, 4, ... threads (OpenMP);
//   gpu_*    a GPU stage's max-pooling kernel (that stage's build only): the kernel alone, the kernel with the
//            copy of the image in and of the pooled image out, and the study's way, one
//            transfer per window.
//
// s03_pool_study (stage 03's CMake) runs the CPU parts; a GPU stage's build, the same
// program with the GPU part (pool_study_gpu.cu) plugged in through GpuPart. Each figure is a
// median; every result is checked against stage 02's, bit for bit. --json writes them all
// (tools/replicate.py reads it).
#pragma once

#include <string>
#include <vector>

#include "02_conv_pool/pool.hpp"

namespace course::pool_study {

/// How many timed runs make one figure: at least min_runs, more while they add up to less than
/// min_ms milliseconds, at most max_runs.
struct Rule {
  int min_runs = 5;
  double min_ms = 30;
  int max_runs = 1000;
};

/// One timed way of pooling one image.
struct Figure {
  std::string status = "ok";  ///< ok | skipped | not timed | error
  std::string reason;         ///< why not ok
  double seconds = 0;         ///< median seconds of one pooling of the whole image
  int runs = 0;               ///< timed runs the median is of
  long calls_per_run = 1;     ///< poolings in one timed run (short ones are timed in groups)
  bool matches = false;       ///< the output (and the arg-max, where kept) equals stage 02's bit for bit
};

/// The image, its geometry and stage 02's output for it (what every other way must reproduce).
struct Problem {
  std::vector<float> x;       ///< N x N values, uniform in [-1, 1)
  PoolGeometry g;             ///< C = 1, H = W = N
  std::vector<float> y;       ///< stage 02's output
  std::vector<int> argmax;    ///< stage 02's arg-max
};

/// The GPU's ways of pooling, supplied by a GPU stage's build of the study (its pool_study_gpu.cu).
class GpuPart {
 public:
  virtual ~GpuPart() = default;
  /// True when a GPU can run them; else `why` says why not (the words of course::no_gpu_reason).
  virtual bool usable(std::string* why) = 0;
  /// "NVIDIA H100 80GB HBM3 (sm_90)"
  virtual std::string device() = 0;
  /// Wall-clock seconds the first CUDA call of this process took (creating the context).
  virtual double context_seconds() = 0;
  /// The GPU kernel alone, the image already on the device (CUDA events).
  virtual Figure kernel_only(const Problem& p, const Rule& rule) = 0;
  /// The copy of the image to the device, the kernel and the copy of the pooled image back, from
  /// and to ordinary (pageable) host memory (CUDA events around the three).
  virtual Figure with_transfers(const Problem& p, const Rule& rule) = 0;
  /// The study's way: for every window, its cells copied to the device, a kernel that takes their
  /// largest, the result copied back (host clock around the whole image).
  virtual Figure per_window(const Problem& p, const Rule& rule) = 0;
};

/// The study's program: parses the command line, times every way on every size and setting,
/// prints a table and writes --json. `gpu` is null in s03_pool_study. Returns the exit code.
int run(int argc, char** argv, const std::string& program, GpuPart* gpu);

}  // namespace course::pool_study
