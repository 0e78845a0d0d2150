// The stage 07 matmul sweep: every kernel and precision against cuBLAS with the same input
// and compute types, at square sizes and at every GEMM shape the course's models run.
//
//   s07_matmul_sweep                                square sizes 128 ... 4096, every contender
//   s07_matmul_sweep --sizes 4096 --csv out.csv     one size, every figure as CSV
//   s07_matmul_sweep --course                       also the GEMMs of mlp and cnn at batch 64 and 256
//   s07_matmul_sweep --only 0,9,10                  some contenders (see --help for the names)
//   s07_matmul_sweep --layouts NN,TN,NT,TT          the square sizes in every operand layout
//   s07_matmul_sweep --roofline                     first the GPU's ceilings: FP32 FMA, mma.sync, memory,
//                                                   and whether cuBLAS's TF32 rounds its FP32 inputs
//
// The contenders, each timed against the cuBLAS call of its own precision:
//
//   precision  contenders                                                     yardstick
//   FP32       kernels 6 (stage 04's best), 7, 8, 9, 10 (autotuned)          cuBLAS SGEMM (kernel 0)
//   TF32       kernels 11, 14 and 15                                          cublasGemmEx, FP32 in, COMPUTE_32F_FAST_TF32
//   BF16       kernels 12, 13, 16 on BF16 inputs (gemm_bf16), on FP32 (gemm) cublasGemmEx, BF16 in, COMPUTE_32F
//
// Each figure is the median of at least --min-runs calls, and of as many more as fit in
// --min-ms milliseconds, timed one by one with CUDA events after an untimed warm-up
// (which is also when kernel 10 tunes: tuning is never timed). Inputs are uniform in
// [-1, 1), never zeros. Correctness: a contender's C is compared with its yardstick's on
// the same operand values (TF32 contenders get inputs already rounded to TF32, BF16 ones
// the BF16 copies, so products agree exactly and only the order of the FP32 sums differs):
// ||C - ref|| / ||ref|| must stay under 1e-6 + 8 u sqrt(K), u = 2^-24. A larger error is
// flagged WRONG and makes the program exit 1.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "04_cuda_matmul/gemm.hpp"
#include "05_im2col_gemm/split_k.hpp"
#include "07_fast_gemm/autotune.hpp"
#include "07_fast_gemm/fast_gemm.hpp"
#include "07_fast_gemm/fast_gemm_kernels.hpp"
#include "07_fast_gemm/rounding_kernels.hpp"
#include "benchmarks/04_cuda_matmul/sweep/mlp_shapes.hpp"
#include "benchmarks/support/gpu_timing.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/gpu/gpu_capability.hpp"
#include "common/core/rng.hpp"
#include "roofline.hpp"
#include "tf32_inputs.hpp"

namespace {

using course::DeviceBuffer;
using course::Precision;

// One product: C[M, N] = op(A) op(B); split_k: the weight gradient as stage 05 runs it
// (SplitKGemm: slices of 256 rows of K in one launch plus a fixed-order sum, for the kernels
// that have a one-launch split; cuBLAS and the others as one call).
struct Shape {
  std::string label;
  int M, N, K;
  bool trans_a, trans_b;
  bool split_k = false;
};

// The operands in every form a contender reads.
struct Operands {
  DeviceBuffer<float> A, B;            // FP32
  DeviceBuffer<float> A_tf32, B_tf32;  // rounded to TF32
  DeviceBuffer<__nv_bfloat16> A_bf16, B_bf16;
  DeviceBuffer<float> partials;        // split-K scratch
};

struct Contender {
  std::string name;       // column head
  Precision precision;
  bool yardstick;         // the cuBLAS call the others of its precision are measured against
  int kernel;             // gemm() kernel, or -1 for a cuBLAS reference / gemm_bf16
  std::function<void(const Shape&, Operands&, float* C)> run;
  bool splits = true;     // runs a split-K weight gradient as stage 05 does (gemm_bf16 has no split: n/a there)
};

std::vector<float> random_matrix(std::size_t n, std::uint64_t seed) {
  course::Rng rng(seed, 11);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.uniform(-1.0, 1.0));
  return v;
}

course::SplitKGemm& split_k() {
  static course::SplitKGemm s(course::kDefaultSplitK);
  return s;
}

// A gemm() kernel on the FP32 operands (or the TF32-rounded ones for kernel 11), as the engines call it.
void run_kernel(int kernel, const Shape& s, Operands& o, float* C) {
  const bool tf32 = course::gemm_precision(kernel) == Precision::TF32;
  const float* A = tf32 ? o.A_tf32.get() : o.A.get();
  const float* B = tf32 ? o.B_tf32.get() : o.B.get();
  if (s.split_k) {
    const int chunks = course::split_k_chunks(kernel, s.K, split_k().max_chunks());
    split_k().run(kernel, s.M, s.N, s.K, A, B, C, chunks, o.partials.get());
  } else {
    course::gemm(kernel, s.trans_a, s.trans_b, s.M, s.N, s.K, 1.f, A, B, 0.f, C);
  }
}

std::vector<Contender> all_contenders() {
  std::vector<Contender> c;
  c.push_back({"0 cuBLAS fp32", Precision::FP32, true, course::kGemmCublas,
               [](const Shape& s, Operands& o, float* C) { run_kernel(course::kGemmCublas, s, o, C); }});
  for (int k : {course::kGemmRegisterTiled, course::kGemmVectorized, course::kGemmWarpTiled, course::kGemmAsyncCopy,
                course::kGemmAutotuned})
    c.push_back({std::to_string(k) + " " + course::gemm_kernel_name(k), Precision::FP32, false, k,
                 [k](const Shape& s, Operands& o, float* C) { run_kernel(k, s, o, C); }});
  c.push_back({"cuBLAS tf32", Precision::TF32, true, -1, [](const Shape& s, Operands& o, float* C) {
                 course::cublas_gemm_tf32(s.trans_a, s.trans_b, s.M, s.N, s.K, 1.f, o.A_tf32.get(), o.B_tf32.get(), 0.f, C);
               }});
  // A kernel is checked at the precision of the kernel that runs in its place on this GPU (kernel_that_runs()).
  const auto precision_here = [](int k) { return course::gemm_precision(course::kernel_that_runs(k)); };
  for (int k : {course::kGemmTf32, course::kGemmWgmmaTf32, course::kGemmTmaTf32})
    c.push_back({std::to_string(k) + " " + course::gemm_kernel_name(k), precision_here(k), false, k,
                 [k](const Shape& s, Operands& o, float* C) { run_kernel(k, s, o, C); }});
  c.push_back({"cuBLAS bf16", Precision::BF16, true, -1, [](const Shape& s, Operands& o, float* C) {
                 course::cublas_gemm_bf16(s.trans_a, s.trans_b, s.M, s.N, s.K, 1.f, o.A_bf16.get(), o.B_bf16.get(), 0.f, C);
               }});
  for (int k : {course::kGemmBf16, course::kGemmWgmma, course::kGemmTmaBf16}) {
    const std::string name = std::to_string(k) + " " + course::gemm_kernel_name(k);
    if (course::gpu_has(course::GpuFeature::Bf16Mma))  // BF16 inputs need kernel 12's mma (gemm_bf16 says so)
      c.push_back({name + " bf16 in", Precision::BF16, false, -1,
                   [k](const Shape& s, Operands& o, float* C) {
                     course::gemm_bf16(k, s.trans_a, s.trans_b, s.M, s.N, s.K, 1.f, o.A_bf16.get(), o.B_bf16.get(), 0.f,
                                       C);
                   },
                   /*splits=*/false});
    c.push_back({name + " fp32 in", precision_here(k), false, k,
                 [k](const Shape& s, Operands& o, float* C) { run_kernel(k, s, o, C); }});
  }
  return c;
}

struct Options {
  std::vector<int> sizes = {128, 256, 512, 1024, 2048, 4096};
  std::vector<std::string> layouts = {"NN"};  // op(A) op(B): N = as stored, T = transposed
  bool roofline = false;
  std::vector<std::string> only;
  bool course_shapes = false;
  double min_ms = 100;
  int min_runs = 5;
  std::string csv;
};

// Median milliseconds of one call of the contender, timed with events after a warm-up call
// (gpu_timing.hpp), which is when kernel 10 tunes.
double median_ms(const Contender& c, const Shape& s, Operands& o, float* C, const Options& opt) {
  return course::bench::median_call_ms([&] { c.run(s, o, C); }, {opt.min_runs, opt.min_ms, 2000});
}

double relative_error(const std::vector<float>& c, const std::vector<float>& ref) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (!std::isfinite(c[i])) return INFINITY;
    const double d = static_cast<double>(c[i]) - ref[i];
    diff += d * d;
    norm += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
}

// Times every contender on every shape, prints the table, writes CSV rows; false if any was wrong.
bool sweep(const std::string& title, const std::vector<Shape>& shapes, const std::vector<Contender>& contenders,
           const Options& opt, std::ostream* csv) {
  int width = 10;
  for (const Shape& s : shapes) width = std::max<int>(width, static_cast<int>(s.label.size()));
  std::printf("\n%s\n%-*s", title.c_str(), width, "shape");
  for (const Contender& c : contenders) std::printf(" | %21s", c.name.c_str());
  std::printf("\n");
  bool all_right = true;
  for (const Shape& s : shapes) {
    const std::size_t a = static_cast<std::size_t>(s.M) * s.K, b = static_cast<std::size_t>(s.K) * s.N;
    const std::size_t mn = static_cast<std::size_t>(s.M) * s.N;
    Operands o;
    o.A.upload(random_matrix(a, 1000 + s.M + 7 * s.K));
    o.B.upload(random_matrix(b, 2000 + s.N + 5 * s.K));
    o.A_tf32.resize(a), o.B_tf32.resize(b), o.A_bf16.resize(a), o.B_bf16.resize(b);
    course::round_array_to_tf32(o.A.get(), o.A_tf32.get(), static_cast<long>(a));
    course::round_array_to_tf32(o.B.get(), o.B_tf32.get(), static_cast<long>(b));
    course::convert_to_bf16(o.A.get(), o.A_bf16.get(), static_cast<long>(a));
    course::convert_to_bf16(o.B.get(), o.B_bf16.get(), static_cast<long>(b));
    if (s.split_k) o.partials.resize(static_cast<std::size_t>(course::kDefaultSplitK) * mn);
    DeviceBuffer<float> C(mn);
    const double flops = 2.0 * s.M * s.N * static_cast<double>(s.K);
    std::map<Precision, std::pair<double, std::vector<float>>> yard;  // per precision: ms and C of the yardstick
    std::printf("%-*s", width, s.label.c_str());
    for (const Contender& c : contenders) {
      if (s.split_k && !c.splits) {  // one GEMM over all of K on one tile of C: not what training runs
        std::printf(" | %21s", "n/a (no split-K)");
        continue;
      }
      const double ms = median_ms(c, s, o, C.get(), opt);
      const std::vector<float> out = C.download();
      double fraction = 0, err = 0;
      bool wrong = false;
      if (c.yardstick) {
        yard[c.precision] = {ms, out};
      } else if (yard.count(c.precision)) {
        fraction = yard[c.precision].first / ms;
        err = relative_error(out, yard[c.precision].second);
        wrong = !(err <= 1e-6 + 8.0 * std::ldexp(1.0, -24) * std::sqrt(std::max(s.K, 1)));
      }
      all_right = all_right && !wrong;
      char cell[64];
      const double us = ms * 1e3;
      if (fraction > 0)
        std::snprintf(cell, sizeof cell, "%s%9.1f us %5.1f%%", wrong ? "WRONG " : "", us, 100 * fraction);
      else
        std::snprintf(cell, sizeof cell, "%9.1f us (ref)", us);
      std::printf(" | %21s", cell);
      if (csv)
        *csv << title.substr(0, title.find(':')) << ",\"" << s.label << "\"," << s.M << "," << s.N << "," << s.K << ","
             << s.trans_a << "," << s.trans_b << "," << s.split_k << ",\"" << c.name << "\","
             << course::precision_name(c.precision) << "," << us << "," << flops / (ms * 1e6) << ","
             << (c.yardstick ? 1.0 : fraction) << "," << err << "\n";
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  return all_right;
}

// The GEMMs of one training step of `cnn` at batch B, as stage 05's engine runs them (conv_gpu.hpp,
// Unroll::Batch; P output pixels, R = C_in * K * K taps) and of its dense layers (stage 04's dense_gpu).
std::vector<Shape> cnn_shapes(int B) {
  const std::string b = " B=" + std::to_string(B);
  return {{"conv1 y=U W^T" + b, B * 784, 16, 9, false, true},
          {"conv1 dW" + b, 16, 9, B * 784, true, false, true},
          {"conv2 y=U W^T" + b, B * 196, 32, 144, false, true},
          {"conv2 dU=dY W" + b, B * 196, 144, 32, false, false},
          {"conv2 dW" + b, 32, 144, B * 196, true, false, true},
          {"fc1 Y=XW^T" + b, B, 100, 1568, false, true},
          {"fc1 dW=dY^T X" + b, 100, 1568, B, true, false},
          {"fc1 dX=dY W" + b, B, 1568, 100, false, false},
          {"fc2 Y=XW^T" + b, B, 10, 100, false, true},
          {"fc2 dW=dY^T X" + b, 10, 100, B, true, false},
          {"fc2 dX=dY W" + b, B, 100, 10, false, false}};
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  course::register_fast_gemm_kernels();
  std::vector<Contender> contenders = all_contenders();
  std::string names;
  for (const Contender& c : contenders) names += (names.empty() ? "" : ", ") + c.name;
  CLI::App app{"Stage 07 matmul sweep: every kernel and precision against cuBLAS of the same precision"};
  app.add_option("--sizes", o.sizes, "Square sizes M = N = K")->delimiter(',');
  app.add_option("--only", o.only, "Contenders to run, by name prefix (the yardsticks always run): " + names)
      ->delimiter(',');
  app.add_flag("--course", o.course_shapes, "Also every GEMM of mlp and cnn at batch 64 and 256");
  app.add_option("--layouts", o.layouts, "Operand layouts of the square sizes: NN, NT, TN, TT (default NN)")
      ->delimiter(',')
      ->check(CLI::IsMember({"NN", "NT", "TN", "TT"}));
  app.add_flag("--roofline", o.roofline, "First measure the GPU's ceilings (FP32 FMA, mma.sync BF16 and TF32, memory)");
  app.add_option("--min-ms", o.min_ms, "Keep timing each point until this many milliseconds");
  app.add_option("--min-runs", o.min_runs, "At least this many timed calls per point")->check(CLI::PositiveNumber);
  app.add_option("--csv", o.csv, "Write every figure to FILE as CSV");
  CLI11_PARSE(app, argc, argv);
  try {
    std::string why;
    if (!course::gpu_available(&why)) {
      std::cerr << "s07_matmul_sweep needs a CUDA GPU: " << why << "\n";
      return 1;
    }
    if (!o.only.empty()) {
      std::vector<Contender> kept;
      for (const Contender& c : contenders) {
        bool wanted = c.yardstick;
        for (const std::string& prefix : o.only) wanted = wanted || c.name.rfind(prefix, 0) == 0;
        if (wanted) kept.push_back(c);
      }
      contenders = kept;
    }
    course::kernel10_autotuner().set_report(nullptr);  // its choices are listed after the tables
    std::ofstream csv_file;
    std::ostream* csv = nullptr;
    if (!o.csv.empty()) {
      csv_file.open(o.csv);
      if (!csv_file) throw std::runtime_error("cannot write " + o.csv);
      csv = &csv_file;
      *csv << "table,shape,M,N,K,trans_a,trans_b,split_k,contender,precision,median_us,gflops,fraction_of_cublas,"
              "rel_error\n";
    }
    // What this GPU (or COURSE_AS_CC) runs in place of the kernels it lacks the features for.
    for (int k = course::kGemmAsyncCopy; k <= course::kLastFastGemm; ++k)
      for (const std::string& note : course::kernel_choice_notes(k))
        if (note.rfind("kernel " + std::to_string(k) + " ", 0) == 0) std::printf("note: %s\n", note.c_str());
    std::printf("%s; median of >= %d runs (>= %.0f ms) per point; %% = the same precision's cuBLAS time / this "
                "one's\n",
                course::gpu_name().c_str(), o.min_runs, o.min_ms);
    if (o.roofline) {
      std::printf("\nceilings of this GPU (each operation alone, operands in registers):\n");
      for (const roofline::Ceiling& c : roofline::measure())
        std::printf("  %-26s %8.1f %-8s (%s)\n", c.what.c_str(), c.rate, c.unit.c_str(), c.how.c_str());
      const tf32_inputs::Finding t = tf32_inputs::measure();
      std::printf("note: cuBLAS TF32 on FP32 inputs (%d^3): relative distance %.2g from the exact product of the inputs "
                  "rounded to nearest TF32, %.2g from that of the inputs truncated: it %s\n",
                  t.n, t.from_nearest, t.from_truncated, t.verdict().c_str());
    }
    std::vector<Shape> square;
    for (const std::string& layout : o.layouts)
      for (int n : o.sizes)
        square.push_back({std::to_string(n) + (o.layouts.size() > 1 ? " " + layout : ""), n, n, n, layout[0] == 'T',
                          layout[1] == 'T'});
    bool right = sweep("square: C[n, n] = A[n, n] B[n, n]", square, contenders, o, csv);
    if (o.course_shapes) {
      Options small = o;
      small.min_ms = std::min(o.min_ms, 20.0);
      for (int batch : {64, 256}) {
        std::vector<Shape> shapes = course::bench::mlp_shapes<Shape>(batch);
        right = sweep("mlp: the GEMMs of one training step at batch " + std::to_string(batch), shapes, contenders,
                      small, csv) && right;
        shapes = cnn_shapes(batch);
        right = sweep("cnn: the GEMMs of one training step at batch " + std::to_string(batch), shapes, contenders,
                      small, csv) && right;
      }
    }
    std::printf("\nkernel 10's choices (autotuned per shape, median of its own timing):\n");
    const course::Autotuner& tuner = course::kernel10_autotuner();
    for (const auto& [key, r] : tuner.choices()) {
      std::printf("  %-70s %s  %.1f us%s\n", key.str().c_str(),
                  tuner.candidates()[static_cast<std::size_t>(r.choice)].sizes.str().c_str(), r.ms * 1e3,
                  r.rejected.empty() ? "" : ("  rejected: " + r.rejected.front()).c_str());
      std::printf("      every candidate (us):");
      for (std::size_t i = 0; i < r.candidate_ms.size(); ++i)
        std::printf(" %dx%dx%d %.1f", tuner.candidates()[i].sizes.bm, tuner.candidates()[i].sizes.bn,
                    tuner.candidates()[i].sizes.bk, r.candidate_ms[i] * 1e3);
      std::printf("\n");
    }
    if (!right) {
      std::fprintf(stderr, "a kernel's result differs from cuBLAS of its precision by more than the bound: see WRONG\n");
      return 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
