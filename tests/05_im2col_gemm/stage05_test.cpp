// Stage 05 beyond the tasks: the workspace arithmetic of the lesson, argument
// checks, the engine's bookkeeping, split-K against one GEMM, and the trainer
// end to end. The first three need no GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "01_fc_softmax/network.hpp"
#include "02_conv_pool/cnn.hpp"
#include "04_cuda_matmul/gemm.hpp"
#include "05_im2col_gemm/conv_gpu.hpp"
#include "05_im2col_gemm/cnn_step.hpp"
#include "cnn_engine.hpp"
#include "common/gpu/gpu_engine.hpp"
#include "05_im2col_gemm/im2col.hpp"
#include "05_im2col_gemm/pool_gpu.hpp"
#include "05_im2col_gemm/split_k.hpp"
#include "common/train/trainer.hpp"
#include "engine_config.hpp"
#include "stage05_support.hpp"
#include "trainer_run.hpp"

using namespace course;
using namespace course::s05test;

namespace {
const ConvGeometry kConv1{1, 28, 28, 16, 3, 1, 1};   // conv1 of cnn
const ConvGeometry kConv2{16, 14, 14, 32, 3, 1, 1};  // conv2 of cnn

// The message of the std::invalid_argument `f` throws ("" when it throws none).
template <typename F>
std::string invalid_argument_message(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

EngineConfig stage05_config(const std::string& spec, Shape3 input, int batch) {
  return testkit::engine_config(spec, input, 10, batch);
}
}  // namespace

// ---- the memory lesson --------------------------------------------------------------------

// A 3x3 kernel with padding 1 and stride 1 keeps the image size, so every value
// lands in 9 patches: U is exactly 9 times the input. Stride 2 has a quarter of
// the pixels, so about 9/4 (28x28 -> 14x14 outputs: 196 * 9 / 784 = 2.25).
TEST(Stage05_Workspace, TheUnrolledInputIsAboutKSquaredTimesTheInput) {
  EXPECT_EQ(unrolled_floats(1, kConv1), 784u * 9u);
  EXPECT_DOUBLE_EQ(static_cast<double>(unrolled_floats(1, kConv1)) / kConv1.in_size(), 9.0);
  EXPECT_DOUBLE_EQ(static_cast<double>(unrolled_floats(1, kConv2)) / kConv2.in_size(), 9.0);
  const ConvGeometry strided{1, 28, 28, 16, 3, 1, 2};
  EXPECT_DOUBLE_EQ(static_cast<double>(unrolled_floats(1, strided)) / strided.in_size(), 2.25);
  EXPECT_EQ(unrolled_floats(64, kConv2), 64u * unrolled_floats(1, kConv2));
}

// The workspace of `cnn` at batch 64, worked by hand (P pixels, R taps):
//   image: the larger U of one image: conv2, P*R = 196 * 144 = 28224 floats = 112896 bytes;
//   batch: conv2, U = 64*196*144 = 1806336, Ypix = 64*196*32 = 401408, and 49
//          split-K partials of 32*144 (12544 rows / 256) = 225792: 2433536 floats = 9734144 bytes.
TEST(Stage05_Workspace, CnnAtBatch64NeedsAbout80TimesMoreWhenUnrolledAtOnce) {
  EXPECT_EQ(conv_workspace_layout(Unroll::Image, 64, kConv2).total() * sizeof(float), 112896u);
  EXPECT_EQ(conv_workspace_layout(Unroll::Image, 64, kConv1).total(), 784u * 9u);
  const int chunks = split_k_chunks(kBestGemm, unrolled_rows(64, kConv2), kDefaultSplitK);
  EXPECT_EQ(chunks, 49);
  const ConvWorkspaceLayout batch = conv_workspace_layout(Unroll::Batch, 64, kConv2, chunks);
  EXPECT_EQ(batch.unrolled, 1806336u);
  EXPECT_EQ(batch.pixels, 401408u);
  EXPECT_EQ(batch.partials, 225792u);
  EXPECT_EQ(batch.total() * sizeof(float), 9734144u);
  EXPECT_EQ(split_k_chunks(kBestGemm, unrolled_rows(64, kConv1), kDefaultSplitK), 196);  // 50176 / 256
  EXPECT_EQ(split_k_chunks(kBestGemm, unrolled_rows(64, kConv1), 32), 32);               // capped
  EXPECT_EQ(split_k_chunks(kGemmCublas, unrolled_rows(64, kConv1), kDefaultSplitK), 1);  // cuBLAS splits by itself
  EXPECT_EQ(split_k_chunks(kGemmTiled32, unrolled_rows(64, kConv1), kDefaultSplitK), 1);  // no one-launch split
  EXPECT_EQ(split_k_chunks(kBestGemm, 256, kDefaultSplitK), 1);                          // too short to split
}

// ---- bad input: a clear message before anything is launched ---------------------------------

TEST(Stage05_Arguments, ConvFunctionsNameWhatIsWrong) {
  float dummy[4] = {};
  float* p = dummy;
  ConvContext ctx;  // no workspace
  EXPECT_TRUE(contains(invalid_argument_message([&] { conv_forward_gpu(ctx, p, p, p, p, 2, kConv1); }),
                       "needs a workspace of"));
  ctx.workspace = p;
  ctx.workspace_floats = conv_workspace_floats(ctx, 2, kConv1);
  EXPECT_TRUE(contains(invalid_argument_message([&] { conv_forward_gpu(ctx, nullptr, p, p, p, 2, kConv1); }),
                       "conv_forward_gpu: x is null"));
  EXPECT_TRUE(contains(invalid_argument_message([&] { conv_backward_weight_gpu(ctx, p, p, nullptr, 2, kConv1); }),
                       "conv_backward_weight_gpu: dW is null"));
  EXPECT_TRUE(contains(invalid_argument_message([&] { conv_backward_input_gpu(ctx, p, p, p, 0, kConv1); }),
                       "batch size must be at least 1"));
  EXPECT_TRUE(contains(invalid_argument_message([&] { im2col_gpu(nullptr, 1, kConv1, p); }), "im2col_gpu: x is null"));
  EXPECT_TRUE(contains(invalid_argument_message([&] { col2im_gpu(p, 1, ConvGeometry{1, 2, 2, 1, 5, 0, 1}, p); }),
                       "larger than the padded input"));
  EXPECT_TRUE(contains(invalid_argument_message([&] { conv_backward_bias_gpu(p, nullptr, 1, kConv1); }),
                       "db is null"));
}

TEST(Stage05_Arguments, PoolFunctionsNameWhatIsWrong) {
  float dummy[4] = {};
  int index[4] = {};
  EXPECT_TRUE(contains(invalid_argument_message([&] { maxpool_forward_gpu(dummy, dummy, nullptr, 1, {1, 4, 4, 2, 2, 0}); }),
                       "argmax is null"));
  EXPECT_TRUE(contains(invalid_argument_message([&] { maxpool_backward_gpu(dummy, index, dummy, 1, {1, 4, 4, 2, 2, 2}); }),
                       "smaller than the window"));
}

TEST(Stage05_Arguments, UnrollNames) {
  EXPECT_EQ(parse_unroll("image"), Unroll::Image);
  EXPECT_EQ(parse_unroll("batch"), Unroll::Batch);
  EXPECT_STREQ(unroll_name(Unroll::Batch), "batch");
  EXPECT_TRUE(contains(invalid_argument_message([] { parse_unroll("rows"); }), "'rows'"));
}

// ---- the engine's bookkeeping ---------------------------------------------------------------------

// Names and shapes of the parameters are those of stage 01's Network with stage
// 02's layer factory: the tensors of every stage's model files.
TEST(Stage05_Engine, ParametersAreNamedAndShapedAsInStage02) {
  for (const std::string& spec : {named_model_spec("cnn"), named_model_spec("cnn-deep"), named_model_spec("mlp"),
                                  std::string("conv4k5p2s2,tanh,pool3s2p1,conv6k1,flatten,fc12,sigmoid,fc10"),
                                  std::string("flatten,fc10")}) {
    const EngineConfig cfg = stage05_config(spec, {3, 20, 20}, 4);
    const std::vector<NamedTensor> got = CnnStep::model_parameters(cfg);
    const std::vector<NamedTensor> want = initial_parameters(cfg.arch, cfg.input, cfg.classes, 1, make_cnn_layer<float>);
    ASSERT_EQ(got.size(), want.size()) << spec;
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i].name, want[i].name) << spec;
      EXPECT_EQ(got[i].tensor.shape, want[i].tensor.shape) << spec << " " << want[i].name;
    }
  }
}

// Refused with a reason before any GPU memory is touched.
TEST(Stage05_Engine, RefusesWhatItCannotRun) {
  const EngineConfig cnn = stage05_config(named_model_spec("cnn"), {1, 28, 28}, 64);
  EXPECT_TRUE(contains(invalid_argument_message([&] { GpuEngine e = cnn_engine(cnn, GpuCnnOptions{kGemmSingleBlock, Unroll::Batch, 1}); }),
                       "use --kernel 2 or later"));
  EXPECT_TRUE(contains(invalid_argument_message([&] { GpuEngine e = cnn_engine(cnn, GpuCnnOptions{9, Unroll::Batch, 1}); }), "kernel 9"));
  EXPECT_TRUE(contains(invalid_argument_message([&] { GpuEngine e = cnn_engine(cnn, GpuCnnOptions{kBestGemm, Unroll::Batch, 0}); }),
                       "--split-k"));
  EngineConfig hinge = cnn;
  hinge.loss = "hinge";
  EXPECT_TRUE(contains(invalid_argument_message([&] { GpuEngine e = cnn_engine(hinge); }), "unknown loss 'hinge'"));
  const EngineConfig too_small = stage05_config(named_model_spec("cnn"), {1, 3, 3}, 8);
  EXPECT_FALSE(invalid_argument_message([&] { GpuEngine e = cnn_engine(too_small); }).empty());
  std::vector<NamedTensor> wrong = CnnStep::model_parameters(cnn);
  wrong[0].tensor = Tensor({16, 1, 5, 5});
  EXPECT_TRUE(contains(invalid_argument_message([&] { GpuEngine e = cnn_engine(cnn, GpuCnnOptions{}, wrong); }), "expected conv1.weight"));
}

// --profile gives a row per layer, named as stage 02 names them, plus the
// gather, the loss and the update; every conv row has a forward and a backward time.
TEST(Stage05_Engine, ProfileHasARowPerLayer) {
  SKIP_WITHOUT_GPU();
  EngineConfig cfg = stage05_config(named_model_spec("cnn"), {1, 28, 28}, 16);
  cfg.profile = true;
  GpuEngine engine = cnn_engine(cfg);
  engine.train_epoch(make_synthetic(48, {1, 28, 28}, 10, 3), 0, {});
  const std::vector<LayerTime> times = engine.layer_times();
  ASSERT_EQ(times.size(), cfg.arch.layers.size() + 3);
  EXPECT_EQ(times[0].layer, "conv1 (conv16k3p1)");
  EXPECT_EQ(times[2].layer, "pool1 (pool2)");
  EXPECT_EQ(times[6].layer, "flatten1 (flatten)");
  EXPECT_EQ(times.back().layer, "sgd update");
  for (const LayerTime& t : times)
    if (t.layer.rfind("conv", 0) == 0) {
      EXPECT_GT(t.forward_ms, 0) << t.layer;
      EXPECT_GT(t.backward_ms, 0) << t.layer;
      EXPECT_EQ(t.calls, 3) << t.layer;
    }
}

// Each full batch replays one captured step (the gather follows the device's step counter, the
// update reads the rate from device memory, so a new rate needs no new capture); the parameters
// end bit for bit where the same steps launched one by one end, a short last batch and two rates
// included.
TEST(Stage05_Engine, GraphOnTrainsBitForBitAsGraphOff) {
  SKIP_WITHOUT_GPU();
  const EngineConfig cfg = stage05_config(named_model_spec("cnn"), {1, 28, 28}, 16);
  const Dataset data = make_synthetic(3 * 16 + 5, {1, 28, 28}, 10, 6);
  GpuEngine graph = cnn_engine(cfg, {}, {}, true), launches = cnn_engine(cfg, {}, {}, false);
  for (int epoch = 0; epoch < 2; ++epoch) {
    graph.set_learning_rate(0.01 / (epoch + 1));
    launches.set_learning_rate(0.01 / (epoch + 1));
    const EpochStats a = graph.train_epoch(data, epoch, {}), b = launches.train_epoch(data, epoch, {});
    EXPECT_NEAR(a.loss_sum, b.loss_sum, 1e-12 * b.loss_sum) << "epoch " << epoch << " (atomicAdd's order aside)";
    EXPECT_EQ(a.correct, b.correct) << "epoch " << epoch;
  }
  EXPECT_EQ(graph.graph_replays(), 2 * 3);
  EXPECT_EQ(graph.graph_captures(), 1) << "the second epoch's rate is read from device memory by the captured step";
  EXPECT_EQ(launches.graph_replays(), 0);
  const std::vector<NamedTensor> a = graph.get_parameters(), b = launches.get_parameters();
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].tensor.data, b[i].tensor.data) << a[i].name;
}

// Checkpoints carry the velocity: what get_optimizer_state() returns, set_optimizer_state() takes back.
TEST(Stage05_Engine, OptimizerStateRoundTrips) {
  SKIP_WITHOUT_GPU();
  const EngineConfig cfg = stage05_config(named_model_spec("cnn"), {1, 28, 28}, 16);
  GpuEngine engine = cnn_engine(cfg);
  engine.train_epoch(make_synthetic(32, {1, 28, 28}, 10, 4), 0, {});
  const std::vector<NamedTensor> state = engine.get_optimizer_state();
  ASSERT_EQ(state[0].name, "conv1.weight.velocity");
  GpuEngine other = cnn_engine(cfg);
  other.set_optimizer_state(state);
  const std::vector<NamedTensor> back = other.get_optimizer_state();
  for (std::size_t i = 0; i < state.size(); ++i) EXPECT_EQ(back[i].tensor.data, state[i].tensor.data) << state[i].name;
}

// ---- split-K ----------------------------------------------------------------------------------------

// Any split of K gives the product of one GEMM, to float rounding, and the same
// split gives the same bits every time (the partials are added in a fixed order).
TEST(Stage05_SplitK, MatchesOneGemmForAnySplit) {
  SKIP_WITHOUT_GPU();
  struct Shape {
    int M, N, K;
  };
  SplitKGemm split(256);
  for (const Shape s : {Shape{16, 9, 5000}, Shape{32, 144, 1030}, Shape{3, 5, 7}, Shape{70, 65, 2049}}) {
    const std::vector<float> A = random_floats(static_cast<std::size_t>(s.K) * s.M, 101);
    const std::vector<float> B = random_floats(static_cast<std::size_t>(s.K) * s.N, 102);
    const DeviceBuffer<float> dA = to_device(A), dB = to_device(B);
    DeviceBuffer<float> one = poisoned<float>(static_cast<std::size_t>(s.M) * s.N);
    gemm(kBestGemm, true, false, s.M, s.N, s.K, 1.f, dA.get(), dB.get(), 0.f, one.get());
    const std::vector<float> want = to_host(one);
    for (int chunks : {1, 2, 3, 7, 32, 200}) {
      DeviceBuffer<float> partials = poisoned<float>(static_cast<std::size_t>(chunks) * s.M * s.N);
      DeviceBuffer<float> C = poisoned<float>(want.size());
      // Kernel 6 splits in one launch; kernel 5 has no such launch and runs the chunks one by one.
      split.run(kGemmTiled32, s.M, s.N, s.K, dA.get(), dB.get(), C.get(), chunks, partials.get());
      EXPECT_TRUE(close("C = A^T B with kernel 5, " + std::to_string(s.M) + " x " + std::to_string(s.N) + " x " +
                            std::to_string(s.K) + " in " + std::to_string(chunks) + " chunks",
                        to_host(C), want, {s.M, s.N}, 1e-4 * std::sqrt(static_cast<double>(s.K)), 1e-4));
      split.run(kBestGemm, s.M, s.N, s.K, dA.get(), dB.get(), C.get(), chunks, partials.get());
      const std::vector<float> got = to_host(C);
      EXPECT_TRUE(close("C = A^T B, " + std::to_string(s.M) + " x " + std::to_string(s.N) + " x " +
                            std::to_string(s.K) + " in " + std::to_string(chunks) + " chunks",
                        got, want, {s.M, s.N}, 1e-4 * std::sqrt(static_cast<double>(s.K)), 1e-4));
      split.run(kBestGemm, s.M, s.N, s.K, dA.get(), dB.get(), C.get(), chunks, partials.get());
      EXPECT_EQ(to_host(C), got) << "split-K is not repeatable with " << chunks << " chunks";
    }
  }
  EXPECT_TRUE(contains(invalid_argument_message([&] {
                         split.run(kBestGemm, 1, 1, 1, nullptr, nullptr, nullptr, 257, nullptr);
                       }),
                       "chunks must be in [1, 256]"));
}

// ---- the trainer ------------------------------------------------------------------------------------

namespace {
nlohmann::json run_stage05_trainer(std::vector<std::string> args, const GpuCnnOptions& options, int* exit_code) {
  const StageInfo stage{"05_im2col_gemm", "Stage 05 (test)"};
  return trainer_run::run_for_json(
      stage,
      [&](const EngineConfig& cfg) { return std::make_unique<GpuEngine>(cfg, std::make_unique<CnnStep>(cfg, options)); },
      "s05_train_solution", std::move(args), exit_code);
}

void expect_learns(const nlohmann::json& j, const std::string& what) {
  ASSERT_EQ(j.at("status"), "ok") << what;
  const auto& epochs = j.at("epochs");
  ASSERT_EQ(epochs.size(), 3u) << what;
  EXPECT_LT(epochs[2].at("loss").get<double>(), 0.7 * epochs[0].at("loss").get<double>()) << what << ": loss did not fall";
  EXPECT_GT(epochs[2].at("test_accuracy").get<double>(), 0.6) << what << ": test accuracy stayed near chance";
}
}  // namespace

TEST(Stage05_Trainer, CnnLearnsTheSyntheticSetWithEitherUnroll) {
  SKIP_WITHOUT_GPU();
  for (Unroll u : {Unroll::Batch, Unroll::Image}) {
    int code = -1;
    const auto j = run_stage05_trainer({"--model", "cnn", "--dataset", "synthetic", "--limit", "640", "--epochs", "3",
                                        "--lr", "0.02", "--profile"},
                                       {kBestGemm, u, kDefaultSplitK}, &code);
    ASSERT_EQ(code, 0) << unroll_name(u);
    expect_learns(j, std::string("unroll ") + unroll_name(u));
    EXPECT_FALSE(j.at("profile").at("layers").empty());
  }
}
