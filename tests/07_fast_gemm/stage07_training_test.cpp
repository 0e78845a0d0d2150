// Training on stage 07's kernels: 20 SGD steps of stage 05's step, in the GPU engine, with every product on
// kernel 9, 10, 11 or 12, beside stage 02's CPU engine from the same weights on the same batches.
//
// FP32 (kernels 9 and 10): the parameters must agree as in stage 05's comparison (Task 5.9):
// |gpu - cpu| <= 1e-4 + 1e-3 |cpu| per element, losses to 1e-4 relative; only the order of
// FP32 additions differs.
//
// TF32 and BF16 (kernels 11 and 12): every product rounds its operands, so the two runs differ
// from the first step on by far more than FP32 rounding, and at this size of difference the
// 20 steps are chaotic: a ReLU input or a max-pool window within u_p of a tie flips, and the
// runs part. How far they part is a property of the training run, measured here on the CPU:
// stage 02 is run again from its starting weights each multiplied by (1 + u_p r), r uniform in
// [-1, 1) (what rounding to the precision does to a value), three times. For each parameter
// tensor, with d = theta_20 - theta_0 the distance travelled,
//
//     spread = max over the three reruns of ||d_rerun - d_cpu|| / ||d_cpu||
//
// (measured for these weights and batches on the CPU: up to 0.049 for TF32, u = 2^-11, and
// 0.11 for BF16, u = 2^-8, depending on the tensor; with changes of 1e-6 instead, reruns
// differ by about 1e-5: it is the size of u_p that sets this off). The GPU run, which rounds at every product of every
// step rather than once at the start, must stay within
//
//     ||d_gpu - d_cpu|| / ||d_cpu|| <= 4 max(spread, u_p)
//
// and its mean training loss within the same multiple of the reruns' spread of it. A wrong
// kernel or a product in the wrong layout moves the parameters by order 1; the kernel tests
// check each precision's rounding element by element.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "02_conv_pool/cnn.hpp"
#include "07_fast_gemm/fast_gemm_step.hpp"
#include "cnn_comparison.hpp"
#include "common/data/data.hpp"
#include "common/gpu/gpu_engine.hpp"
#include "fast_gemm_check.hpp"

using namespace course;
using namespace course::s07test;

namespace {

constexpr int kSteps = 20, kClasses = 10;

EngineConfig config(const std::string& spec, int batch) {
  EngineConfig cfg;
  cfg.arch = parse_arch(spec);
  cfg.input = {1, 28, 28};
  cfg.classes = kClasses;
  cfg.batch = batch;
  cfg.lr = 0.01;
  cfg.momentum = 0.9;
  cfg.seed = 7;
  return cfg;
}

double norm_of_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
  return std::sqrt(s);
}

// The relative distance between two runs' travels: ||(a - start) - (b - start)|| / ||b - start||.
double travel_difference(const std::vector<float>& start, const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> da(start.size()), db(start.size());
  for (std::size_t j = 0; j < start.size(); ++j) da[j] = a[j] - start[j], db[j] = b[j] - start[j];
  return norm_of_difference(da, db) / std::max(norm_of_difference(db, std::vector<float>(start.size(), 0.f)), 1e-30);
}

/// How far stage 02's 20 steps part when the starting weights are rounded-like changed by u_p (see the file
/// comment): per parameter tensor, and for the loss sum (last element).
std::vector<double> cpu_spread(const EngineConfig& cfg, const Dataset& train, const std::vector<NamedTensor>& initial,
                               const testkit::SideBySide& base, double u) {
  std::vector<double> spread(initial.size() + 1, 0.0);
  for (std::uint64_t draw = 1; draw <= 3; ++draw) {
    std::vector<NamedTensor> moved = initial;
    Rng rng(draw, 5);
    for (NamedTensor& t : moved)
      for (float& v : t.tensor.data) v *= static_cast<float>(1.0 + u * rng.uniform(-1.0, 1.0));
    CpuEngine cpu(cfg, make_cnn_layer<float>);
    cpu.set_parameters(moved);
    const EpochStats stats = cpu.train_epoch(train, 0, {});
    const std::vector<NamedTensor> got = cpu.get_parameters();
    for (std::size_t i = 0; i < got.size(); ++i) {
      // The rerun's travel is measured from its own start.
      std::vector<float> travel(got[i].tensor.size());
      for (std::size_t j = 0; j < travel.size(); ++j)
        travel[j] = initial[i].tensor.data[j] + (got[i].tensor.data[j] - moved[i].tensor.data[j]);
      spread[i] = std::max(spread[i], travel_difference(initial[i].tensor.data, travel, base.cpu_params[i].tensor.data));
    }
    spread.back() = std::max(spread.back(), std::fabs(stats.loss_sum - base.cpu_train.loss_sum) / base.cpu_train.loss_sum);
  }
  return spread;
}

void compare_with_stage02(const std::string& model, int kernel, int batch) {
  register_fast_gemm_kernels();
  kernel10_autotuner().set_report(nullptr);
  const Precision precision = gemm_precision(kernel);
  const std::string context = model + " on kernel " + std::to_string(kernel) + " (" + gemm_kernel_name(kernel) + ", " +
                              precision_name(precision) + "), batch " + std::to_string(batch);
  const EngineConfig cfg = config(named_model_spec(model), batch);
  const Dataset train = make_synthetic(kSteps * batch, cfg.input, kClasses, 91);
  const Dataset test = make_synthetic(100, cfg.input, kClasses, 92);
  const std::vector<NamedTensor> initial = testkit::spread_parameters(CnnStep::model_parameters(cfg), 93);
  GpuCnnOptions options;
  options.gemm_kernel = kernel;
  GpuEngine gpu(cfg, std::make_unique<FastGemmStep>(cfg, options));
  gpu.set_parameters(initial);
  const testkit::SideBySide r = testkit::train_side_by_side(gpu, cfg, train, test, initial);
  ASSERT_EQ(r.gpu_params.size(), r.cpu_params.size());
  if (precision == Precision::FP32) {
    EXPECT_NEAR(r.gpu_train.loss_sum, r.cpu_train.loss_sum, 1e-4 * r.cpu_train.loss_sum) << context;
    for (std::size_t i = 0; i < r.cpu_params.size(); ++i)
      for (std::size_t j = 0; j < r.cpu_params[i].tensor.size(); ++j) {
        const double want = r.cpu_params[i].tensor.data[j], got = r.gpu_params[i].tensor.data[j];
        ASSERT_LE(std::fabs(got - want), 1e-4 + 1e-3 * std::fabs(want))
            << context << ", " << r.cpu_params[i].name << "[" << j << "] after " << kSteps << " steps";
      }
    return;
  }
  const double u = unit_roundoff(precision);
  const std::vector<double> spread = cpu_spread(cfg, train, initial, r, u);
  for (std::size_t i = 0; i < r.cpu_params.size(); ++i) {
    const double rel = travel_difference(initial[i].tensor.data, r.gpu_params[i].tensor.data, r.cpu_params[i].tensor.data);
    const double bound = 4 * std::max(spread[i], u);
    std::printf("  %-52s %-14s ||d_gpu - d_cpu|| / ||d_cpu|| = %.4f  (stage 02's own spread %.4f, bound %.4f)\n",
                context.c_str(), r.cpu_params[i].name.c_str(), rel, spread[i], bound);
    EXPECT_LE(rel, bound) << context << ", " << r.cpu_params[i].name << ": the GPU run parted from stage 02 by " << rel
                          << " of the distance travelled in " << kSteps << " steps; stage 02 parts from itself by "
                          << spread[i] << " when its start is rounded to " << precision_name(precision);
  }
  const double loss_rel = std::fabs(r.gpu_train.loss_sum - r.cpu_train.loss_sum) / r.cpu_train.loss_sum;
  EXPECT_LE(loss_rel, 4 * std::max(spread.back(), u)) << context << ": training loss " << r.gpu_train.loss_sum << " vs "
                                                      << r.cpu_train.loss_sum;
}

}  // namespace

TEST(Stage07_Training, Fp32KernelsMatchStage02AfterTwentyCnnSteps) {
  SKIP_WITHOUT_GPU();
  compare_with_stage02("cnn", kGemmAsyncCopy, 32);
  compare_with_stage02("cnn", kGemmAutotuned, 32);
}

TEST(Stage07_Training, Tf32AndBf16StayWithinTheirBoundOfStage02) {
  SKIP_WITHOUT_GPU();
  for (const int kernel : {kGemmTf32, kGemmBf16}) {
    compare_with_stage02("cnn", kernel, 32);
    compare_with_stage02("mlp", kernel, 16);
  }
}

TEST(Stage07_Training, MlpOnEveryFp32KernelMatchesStage02) {
  SKIP_WITHOUT_GPU();
  for (const int kernel : {kGemmVectorized, kGemmWarpTiled, kGemmAsyncCopy, kGemmAutotuned})
    compare_with_stage02("mlp", kernel, 16);
}

// Kernel numbers and precisions, without a GPU.
TEST(Stage07_Precision, EveryKernelHasItsPrecisionAndEveryPrecisionADefault) {
  register_fast_gemm_kernels();
  EXPECT_EQ(gemm_kernel_count(), kLastFastGemm + 1);
  for (int k = 0; k <= kGemmAutotuned; ++k) EXPECT_EQ(gemm_precision(k), Precision::FP32) << "kernel " << k;
  EXPECT_EQ(gemm_precision(kGemmTf32), Precision::TF32);
  EXPECT_EQ(gemm_precision(kGemmBf16), Precision::BF16);
  EXPECT_EQ(gemm_precision(kGemmWgmma), Precision::BF16);
  EXPECT_EQ(gemm_precision(kGemmWgmmaTf32), Precision::TF32);
  for (const Precision p : {Precision::FP32, Precision::TF32, Precision::BF16}) {
    EXPECT_EQ(gemm_precision(default_kernel(p)), p);
    EXPECT_EQ(parse_precision(precision_name(p)), p);
  }
  EXPECT_THROW(parse_precision("fp16"), std::invalid_argument);
  EXPECT_THROW(gemm_precision(kLastFastGemm + 1), std::invalid_argument);
  for (int k = kGemmVectorized; k <= kLastFastGemm; ++k) EXPECT_TRUE(gemm_has_k_slices(k)) << "kernel " << k;
  register_fast_gemm_kernels();  // a second registration changes nothing
  EXPECT_EQ(gemm_kernel_count(), kLastFastGemm + 1);
}
