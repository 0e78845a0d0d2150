// Stage 03 runs stage 02's layers, average pools included (the factory builds
// them): both engines, on 1 to 4 threads, train a model with padded and
// overlapping average pools like stage 02's one-thread engine, to the
// tolerances of stage03_engines_test.cpp (1e-5 relative: the threads add the
// shards' gradients in another order, nothing else).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "01_fc_softmax/cpu_engine.hpp"
#include "02_conv_pool/cnn.hpp"
#include "03_openmp/omp_engine.hpp"
#include "stage03_support.hpp"

using namespace course;
using namespace course::s03test;

namespace {

// Smooth but for one ReLU: average pools and tanh keep 1 to 4 threads on one trajectory.
const char* const kAvgCnn = "conv4k3p1,tanh,avgpool2p1,conv6k3p1,relu,avgpool3s1p1,avgpool2,flatten,fc16,tanh,fc10";

void check_against_one_thread(Parallelism p) {
  const Dataset train_set = make_synthetic(200, kCnnInput, kClasses, 85);  // 6 batches of 32 and one of 8
  CpuEngine single(config(kAvgCnn, kCnnInput, 32, 1, 0.1), make_cnn_layer<float>);
  const EpochStats want = single.train_epoch(train_set, 0, {});
  for (int T = 1; T <= 4; ++T) {
    const std::string context = parallelism_label(p) + " " + kAvgCnn + " on " + std::to_string(T) + " threads";
    auto engine = make_omp_engine(config(kAvgCnn, kCnnInput, 32, T, 0.1), p, make_cnn_layer<float>);
    const EpochStats got = engine->train_epoch(train_set, 0, {});
    EXPECT_EQ(got.seen, want.seen) << context;
    EXPECT_NEAR(got.loss_sum, want.loss_sum, 1e-5 * want.loss_sum) << context;
    expect_params_close(engine->get_parameters(), single.get_parameters(), 1e-5, context);
  }
}

}  // namespace

TEST(Stage03_AvgPool, DataParallelMatchesOneThread) { check_against_one_thread(Parallelism::Data); }

TEST(Stage03_AvgPool, LoopLevelMatchesOneThread) { check_against_one_thread(Parallelism::Loops); }
