// The stage 04 matmul sweep: every kernel at every size against cuBLAS.
//
//   s04_matmul_sweep                          square sizes 128 ... 4096, every kernel
//   s04_matmul_sweep --sizes 32,1000 --csv sweep.csv
//   s04_matmul_sweep --mlp                    also the GEMMs of the MLP's layers (784-256-128-10)
//   s04_matmul_sweep --sizes 16,32 --kernels 0,1,2,3,4,5,6   kernel 1 too (it stops at 32 x 32)
//
// Each figure is the median of at least --min-runs timed calls, and of as many
// more as fit in --min-ms milliseconds, timed with CUDA events after one
// untimed warm-up call. Inputs are uniform in [-1, 1) (never zeros, which some
// hardware multiplies faster). Every kernel's C is compared with cuBLAS's; a
// relative error above 1e-5 is flagged in the table and makes the program exit 1.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "04_cuda_matmul/gemm.hpp"
#include "benchmarks/04_cuda_matmul/sweep/mlp_shapes.hpp"
#include "benchmarks/support/gpu_timing.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/core/rng.hpp"

namespace {

using course::DeviceBuffer;

struct Options {
  std::vector<int> sizes = {128, 256, 512, 1024, 2048, 4096};
  std::vector<int> kernels = {0, 2, 3, 4, 5, 6};  // kernel 1 runs only up to 32 x 32: --sizes 16,32 --kernels 0,1
  double min_ms = 100;
  int min_runs = 5;
  bool mlp = false;
  std::string csv;
};

// One product to time: C[M, N] = op(A) op(B) with op(A) [M, K], op(B) [K, N].
struct Shape {
  std::string label;
  int M, N, K;
  bool trans_a, trans_b;
};

std::vector<float> random_matrix(std::size_t n, std::uint64_t seed) {
  course::Rng rng(seed, 11);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.uniform(-1.0, 1.0));
  return v;
}

// Median milliseconds of one gemm call, timed with events after a warm-up call (gpu_timing.hpp).
double time_gemm(int kernel, const Shape& s, const float* A, const float* B, float* C, const Options& o) {
  return course::bench::median_call_ms(
      [&] { course::gemm(kernel, s.trans_a, s.trans_b, s.M, s.N, s.K, 1.f, A, B, 0.f, C); },
      {o.min_runs, o.min_ms, 1000});
}

// ||c - ref|| / ||ref||
double relative_error(const std::vector<float>& c, const std::vector<float>& ref) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    const double d = static_cast<double>(c[i]) - ref[i];
    diff += d * d;
    norm += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
}

struct Result {
  bool ran = false;
  double ms = 0, gflops = 0, rel_error = 0;
};

// Times every kernel on every shape; prints the table; returns false if any kernel was wrong.
bool sweep(const std::string& title, const std::vector<Shape>& shapes, const Options& o, std::ostream* csv) {
  const std::vector<std::string> names = course::gemm_kernel_names();
  const int label_width = std::max<int>(
      6, static_cast<int>(std::max_element(shapes.begin(), shapes.end(), [](const Shape& a, const Shape& b) {
                            return a.label.size() < b.label.size();
                          })->label.size()));
  std::printf("\n%s\n%-*s", title.c_str(), label_width, "shape");
  for (int k : o.kernels)
    std::printf(" | %20s", (std::to_string(k) + " " + names[static_cast<std::size_t>(k)]).c_str());
  std::printf("\n");
  bool all_right = true;
  for (const Shape& s : shapes) {
    const std::size_t a_size = static_cast<std::size_t>(s.M) * s.K, b_size = static_cast<std::size_t>(s.K) * s.N;
    const std::size_t c_size = static_cast<std::size_t>(s.M) * s.N;
    DeviceBuffer<float> A, B, C(c_size), reference(c_size);
    A.upload(random_matrix(a_size, 1000 + s.M));
    B.upload(random_matrix(b_size, 2000 + s.N));
    course::gemm(0, s.trans_a, s.trans_b, s.M, s.N, s.K, 1.f, A.get(), B.get(), 0.f, reference.get());
    const std::vector<float> ref = reference.download();
    const double flops = 2.0 * s.M * s.N * static_cast<double>(s.K);
    std::vector<Result> results;
    for (int k : o.kernels) {
      Result r;
      if (k != course::kGemmSingleBlock || c_size <= static_cast<std::size_t>(course::kMaxThreadsPerBlock)) {
        r.ran = true;
        r.ms = time_gemm(k, s, A.get(), B.get(), C.get(), o);
        r.gflops = flops / (r.ms * 1e6);
        r.rel_error = relative_error(C.download(), ref);
      }
      results.push_back(r);
    }
    double cublas_gflops = 0;
    for (std::size_t i = 0; i < o.kernels.size(); ++i)
      if (o.kernels[i] == course::kGemmCublas) cublas_gflops = results[i].gflops;
    std::printf("%-*s", label_width, s.label.c_str());
    for (std::size_t i = 0; i < o.kernels.size(); ++i) {
      const Result& r = results[i];
      const bool wrong = r.ran && !(r.rel_error <= 1e-5);
      all_right = all_right && !wrong;
      char cell[64];
      if (!r.ran)
        std::snprintf(cell, sizeof cell, "n/a (> %d outputs)", course::kMaxThreadsPerBlock);
      else if (cublas_gflops > 0)
        std::snprintf(cell, sizeof cell, "%s%8.0f (%5.1f%%)", wrong ? "WRONG " : "", r.gflops,
                      100.0 * r.gflops / cublas_gflops);
      else
        std::snprintf(cell, sizeof cell, "%s%8.0f", wrong ? "WRONG " : "", r.gflops);
      std::printf(" | %20s", cell);
      if (csv && r.ran)
        *csv << title.substr(0, title.find(':')) << "," << s.label << "," << s.M << "," << s.N << "," << s.K << ","
             << s.trans_a << "," << s.trans_b << "," << o.kernels[i] << ","
             << names[static_cast<std::size_t>(o.kernels[i])] << "," << r.ms << "," << r.gflops << ","
             << (cublas_gflops > 0 ? r.gflops / cublas_gflops : 0) << "," << r.rel_error << "\n";
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  return all_right;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Stage 04 matmul sweep: GFLOP/s of every kernel at every size, and % of cuBLAS SGEMM"};
  app.add_option("--sizes", o.sizes, "Square sizes M = N = K")->delimiter(',');
  app.add_option("--kernels", o.kernels, "Kernels to time (0 = cuBLAS is the 100% column)")
      ->delimiter(',')
      ->check(CLI::Range(0, course::kNumGemmKernels - 1));
  app.add_option("--min-ms", o.min_ms, "Keep timing each point until this many milliseconds");
  app.add_option("--min-runs", o.min_runs, "At least this many timed calls per point")->check(CLI::PositiveNumber);
  app.add_flag("--mlp", o.mlp, "Also time the GEMMs of the MLP 784-256-128-10 at batch 64 and 256");
  app.add_option("--csv", o.csv, "Write every figure to FILE as CSV");
  CLI11_PARSE(app, argc, argv);
  try {
    std::string why;
    if (!course::gpu_available(&why)) {
      std::cerr << "s04_matmul_sweep needs a CUDA GPU: " << why << "\n";
      return 1;
    }
    std::ofstream csv_file;
    std::ostream* csv = nullptr;
    if (!o.csv.empty()) {
      csv_file.open(o.csv);
      if (!csv_file) throw std::runtime_error("cannot write " + o.csv);
      csv = &csv_file;
      *csv << "table,shape,M,N,K,trans_a,trans_b,kernel,kernel_name,median_ms,gflops,fraction_of_cublas,rel_error\n";
    }
    std::printf("%s; GFLOP/s of the median of >= %d runs (>= %.0f ms), %% of cuBLAS SGEMM in brackets\n",
                course::gpu_name().c_str(), o.min_runs, o.min_ms);
    std::vector<Shape> square;
    for (int n : o.sizes) square.push_back({std::to_string(n), n, n, n, false, false});
    bool right = sweep("square: C[n, n] = A[n, n] B[n, n], FP32", square, o, csv);
    if (o.mlp) {
      std::vector<Shape> mlp = course::bench::mlp_shapes<Shape>(64);
      for (const Shape& s : course::bench::mlp_shapes<Shape>(256)) mlp.push_back(s);
      right = sweep("mlp: the GEMMs of one training step", mlp, o, csv) && right;
    }
    if (!right) {
      std::fprintf(stderr, "a kernel's result differs from cuBLAS by more than 1e-5 (relative): see WRONG above\n");
      return 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
