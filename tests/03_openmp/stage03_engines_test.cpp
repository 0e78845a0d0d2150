// Stage 03 end to end: both engines train a few epochs on the synthetic set
// with 1 to 4 threads; the results do not depend on the thread count beyond
// the floating-point summation order, and repeat bit for bit for a fixed one.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "01_fc_softmax/cpu_engine.hpp"
#include "03_openmp/omp_engine.hpp"
#include "stage03_support.hpp"

using namespace course;
using namespace course::s03test;

namespace {

struct Run {
  std::vector<double> train_loss, test_loss;
  std::vector<long> test_correct;
  std::vector<NamedTensor> params;
};

Run train(Engine& engine, const Dataset& train_set, const Dataset& test_set, int epochs) {
  Run run;
  for (int e = 0; e < epochs; ++e) {
    const EpochStats s = engine.train_epoch(train_set, e, {});
    const EpochStats t = engine.evaluate(test_set, nullptr);
    run.train_loss.push_back(s.loss_sum / s.seen);
    run.test_loss.push_back(t.loss_sum / t.seen);
    run.test_correct.push_back(t.correct);
  }
  run.params = engine.get_parameters();
  return run;
}

std::unique_ptr<Engine> engine_for(Parallelism p, const EngineConfig& cfg, const LayerFactory<float>& make) {
  return make_omp_engine(cfg, p, make);
}

// Tolerances of a few epochs. Every step adds rounding differences of ~1e-7
// that the following steps carry along; after these three epochs of 10 steps
// the parameters were measured to agree to 4e-7 of each tensor's largest
// entry and the losses to ~1e-7 relative, 20 to 100 times inside the bounds.
// Kinks can do more: a rounding difference that moves a pre-activation across
// 0 (ReLU) or changes which cell of a window is largest (max-pool) changes
// that example's gradient outright. These small runs cross none; the full
// CNN on Fashion-MNIST does within ~10 steps, after which one and two threads
// follow different (equally good) trajectories. Smooth models (tanh, strided
// convolutions instead of pooling) stayed within 4e-7 over 100 steps.
constexpr double kLossTolerance = 1e-5;
constexpr double kParamTolerance = 1e-5;

void check_thread_independence(Parallelism p, const std::string& spec, Shape3 input, const LayerFactory<float>& make,
                               double lr) {
  const Dataset train_set = make_synthetic(300, input, kClasses, 81);  // 300 = 9 batches of 32 + 12
  const Dataset test_set = make_synthetic(100, input, kClasses, 82);
  CpuEngine single(config(spec, input, 32, 1, lr), make);
  const Run want = train(single, train_set, test_set, 3);
  for (int T = 1; T <= 4; ++T) {
    const std::string context = parallelism_label(p) + " " + spec + " on " + std::to_string(T) + " threads";
    auto engine = engine_for(p, config(spec, input, 32, T, lr), make);
    const Run got = train(*engine, train_set, test_set, 3);
    for (std::size_t e = 0; e < want.train_loss.size(); ++e) {
      EXPECT_NEAR(got.train_loss[e], want.train_loss[e], kLossTolerance * want.train_loss[e]) << context << ", epoch " << e;
      EXPECT_NEAR(got.test_loss[e], want.test_loss[e], kLossTolerance * want.test_loss[e]) << context << ", epoch " << e;
      EXPECT_NEAR(got.test_correct[e], want.test_correct[e], 1) << context << ", epoch " << e;
    }
    expect_params_close(got.params, want.params, kParamTolerance, context + ", after 3 epochs");
  }
  EXPECT_LT(want.train_loss.back(), 0.7 * want.train_loss.front()) << "the runs compared must actually learn";
}

void check_repeatable(Parallelism p, const std::string& spec, Shape3 input, const LayerFactory<float>& make) {
  const Dataset train_set = make_synthetic(200, input, kClasses, 83);
  const Dataset test_set = make_synthetic(50, input, kClasses, 84);
  auto a = engine_for(p, config(spec, input, 24, 3), make);
  auto b = engine_for(p, config(spec, input, 24, 3), make);
  const Run ra = train(*a, train_set, test_set, 2), rb = train(*b, train_set, test_set, 2);
  EXPECT_EQ(ra.train_loss, rb.train_loss) << parallelism_label(p) << ": same thread count, same bits";
  EXPECT_EQ(ra.test_loss, rb.test_loss);
  expect_params_close(ra.params, rb.params, 0.0, parallelism_label(p) + " " + spec + ", two runs on 3 threads");
}

}  // namespace

TEST(Stage03_ThreadCount, DataParallelMlpResultsDoNotDependOnIt) {
  check_thread_independence(Parallelism::Data, kSmallMlp, kMlpInput, make_dense_or_activation<float>, 0.05);
}

TEST(Stage03_ThreadCount, DataParallelCnnResultsDoNotDependOnIt) {
  check_thread_independence(Parallelism::Data, kSmallCnn, kCnnInput, make_cnn_layer<float>, 0.1);
}

TEST(Stage03_ThreadCount, LoopLevelMlpResultsDoNotDependOnIt) {
  check_thread_independence(Parallelism::Loops, kSmallMlp, kMlpInput, make_dense_or_activation<float>, 0.05);
}

TEST(Stage03_ThreadCount, LoopLevelCnnResultsDoNotDependOnIt) {
  check_thread_independence(Parallelism::Loops, kSmallCnn, kCnnInput, make_cnn_layer<float>, 0.1);
}

TEST(Stage03_ThreadCount, SameThreadCountSameBits) {
  check_repeatable(Parallelism::Data, kSmallCnn, kCnnInput, make_cnn_layer<float>);
  check_repeatable(Parallelism::Loops, kSmallCnn, kCnnInput, make_cnn_layer<float>);
}

TEST(Stage03_Engines, SameInitialWeightsAsStage02) {
  const EngineConfig cfg = config(named_model_spec("cnn"), {1, 28, 28}, 64, 3);
  CpuEngine stage02(cfg, make_cnn_layer<float>);
  for (Parallelism p : {Parallelism::Data, Parallelism::Loops})
    expect_params_close(make_omp_engine(cfg, p, make_cnn_layer<float>)->get_parameters(), stage02.get_parameters(), 0.0,
                        parallelism_label(p) + " initial weights");
}

TEST(Stage03_Engines, DeviceNamesTheThreadsAndTheStrategy) {
  const EngineConfig cfg = config(kSmallMlp, kMlpInput, 8, 16);
  EXPECT_EQ(make_omp_engine(cfg, Parallelism::Data, make_dense_or_activation<float>)->device(),
            "CPU, 16 threads (data-parallel)");
  EXPECT_EQ(make_omp_engine(cfg, Parallelism::Loops, make_dense_or_activation<float>)->device(),
            "CPU, 16 threads (loop-level)");
}

TEST(Stage03_Engines, BadStrategyOrThreadCountIsAClearError) {
  try {
    parse_parallelism("both");
    FAIL() << "'both' is not a strategy";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'data' or 'loops'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_omp_engine(config(kSmallMlp, kMlpInput, 8, 0), Parallelism::Data, make_dense_or_activation<float>),
               std::invalid_argument);
  EXPECT_THROW(shard_of(10, 0, 0), std::invalid_argument);
  EXPECT_THROW(shard_of(10, 4, 4), std::invalid_argument);
}

TEST(Stage03_Shards, ContiguousBalancedAndCovering) {
  for (int B = 0; B <= 20; ++B)
    for (int T = 1; T <= 6; ++T) {
      int next = 0;
      for (int t = 0; t < T; ++t) {
        const Shard s = shard_of(B, T, t);
        EXPECT_EQ(s.begin, next) << "shard " << t << " of " << T << ", batch " << B;
        EXPECT_TRUE(s.size() == B / T || s.size() == B / T + 1) << "unbalanced shard " << t;
        EXPECT_GE(shard_of(B, T, 0).size(), s.size()) << "the first shards are the larger ones";
        next = s.end;
      }
      EXPECT_EQ(next, B);
    }
}
