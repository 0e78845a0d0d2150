// Stage 08 without a GPU: how a spec is cut into fused kernels, what is refused and
// why, the parameter layout every stage shares, the tilings of `cnn` worked by hand,
// and the traffic of a step computed from the plan.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "01_fc_softmax/network.hpp"
#include "02_conv_pool/cnn.hpp"
#include "08_fused/fused_step.hpp"
#include "08_fused/fused_plan.hpp"
#include "s08_support.hpp"

using namespace course;

namespace {

std::vector<FusedLayer> plan_of(const std::string& spec, Shape3 input = {1, 28, 28}) {
  return plan_fused_layers(parse_arch(spec), input, 10);
}

// The message of the std::invalid_argument `spec` is refused with ("" when it is not).
std::string plan_refusal(const std::string& spec, Shape3 input = {1, 28, 28}) {
  return s08test::fusion_refusal(spec, input);
}
using s08test::contains;

}  // namespace

TEST(Stage08_Plan, CnnIsFourFusedLayers) {
  const std::vector<FusedLayer> l = plan_of(named_model_spec("cnn"));
  ASSERT_EQ(l.size(), 4u);
  EXPECT_EQ(l[0].name, "conv1+relu1+pool1");
  EXPECT_EQ(l[0].tokens, "conv16k3p1,relu,pool2");
  EXPECT_EQ(l[1].name, "conv2+relu2+pool2");
  EXPECT_EQ(l[2].name, "fc1+relu3") << "flatten1 is a view: no kernel";
  EXPECT_EQ(l[3].name, "fc2+loss");
  EXPECT_EQ(l[3].kind, FusedLayer::Kind::Head);
  EXPECT_EQ(l[1].conv.C, 16);
  EXPECT_EQ(l[1].conv.Hq, 7);
  EXPECT_EQ(l[2].in.size(), 32 * 7 * 7);
  // The parameters where stage 01's Network puts them: conv1.weight at 0, conv1.bias after it, ...
  Network<float> net(parse_arch(named_model_spec("cnn")), {1, 28, 28}, 10, make_cnn_layer<float>);
  std::size_t offset = 0;
  const auto params = net.params();
  for (std::size_t i = 0; i < l.size(); ++i) {
    EXPECT_EQ(l[i].weight, offset) << l[i].name;
    EXPECT_EQ(l[i].weight_count, params[2 * i]->value.size()) << params[2 * i]->name;
    offset += params[2 * i]->value.size();
    EXPECT_EQ(l[i].bias, offset) << l[i].name;
    offset += params[2 * i + 1]->value.size();
  }
}

TEST(Stage08_Plan, CnnDeepAndMlpAndOtherSpecsItFuses) {
  EXPECT_EQ(plan_of(named_model_spec("cnn-deep"), {3, 32, 32}).size(), 6u);
  const std::vector<FusedLayer> mlp = plan_of(named_model_spec("mlp"));
  ASSERT_EQ(mlp.size(), 3u);
  EXPECT_EQ(mlp[0].name, "fc1+relu1");
  EXPECT_EQ(mlp[0].act, FusedAct::ReLU);
  // conv without an activation or a pool, a 1x1 and a 5x5, a dense layer without an activation, no flatten.
  const std::vector<FusedLayer> l = plan_of("conv4k5p2,pool2,conv6k1,tanh,fc20,fc10");
  ASSERT_EQ(l.size(), 4u);
  EXPECT_EQ(l[0].conv.act, FusedAct::None);
  EXPECT_EQ(l[0].conv.Q, 2);
  EXPECT_EQ(l[1].conv.Q, 1);
  EXPECT_EQ(l[1].conv.act, FusedAct::Tanh);
  EXPECT_EQ(l[2].act, FusedAct::None);
  EXPECT_EQ(plan_of("fc10").size(), 1u) << "a lone head";
}

// What cannot be fused is refused, naming the layer, its position and the reason.
TEST(Stage08_Plan, RefusesWhatItCannotFuse) {
  EXPECT_TRUE(contains(plan_refusal("conv8k3p1s2,relu,fc10"), "layer 1 'conv8k3p1s2'"));
  EXPECT_TRUE(contains(plan_refusal("conv8k3p1s2,relu,fc10"), "stride is 2"));
  EXPECT_TRUE(contains(plan_refusal("conv8k7p3,fc10"), "7x7"));
  EXPECT_TRUE(contains(plan_refusal("conv8k3p1,relu,pool3,fc10"), "layer 3 'pool3'"));
  EXPECT_TRUE(contains(plan_refusal("conv8k3p1,relu,pool2s1,fc10"), "pools 2x2 windows with stride 2"));
  EXPECT_TRUE(contains(plan_refusal("conv8k3p1,relu,pool2p1,fc10"), "no padding"));
  EXPECT_TRUE(contains(plan_refusal("relu,fc10"), "an activation must follow"));
  EXPECT_TRUE(contains(plan_refusal("pool2,fc10"), "a max-pool must follow a conv"));
  EXPECT_TRUE(contains(plan_refusal("fc20,relu,tanh,fc10"), "layer 3 'tanh'"));
  EXPECT_TRUE(contains(plan_refusal("conv8k3p1,pool2,relu,fc10"), "layer 3 'relu'")) << "the pool comes after the activation";
  EXPECT_EQ(plan_refusal("conv8k3p1,relu,fc10"), "") << "a conv block without a pool is fused";
  EXPECT_FALSE(plan_refusal("conv8k5,relu,pool2,fc10", {1, 4, 4}).empty()) << "a 5x5 filter on a 4x4 image";
  try {  // more classes than the head keeps in registers
    plan_fused_layers(parse_arch("fc20,relu,fc40"), {1, 28, 28}, 40);
    ADD_FAILURE() << "a head of 40 classes was planned";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "layer 3 'fc40'")) << e.what();
    EXPECT_TRUE(contains(e.what(), "at most 32")) << e.what();
  }
  EXPECT_NO_THROW(plan_fused_layers(parse_arch("fc20,relu,fc32"), {1, 28, 28}, 32));
  EngineConfig cfg;
  cfg.arch = parse_arch(named_model_spec("cnn"));
  cfg.input = {1, 28, 28};
  cfg.loss = "hinge";
  EXPECT_THROW(FusedStep::plan(cfg), std::invalid_argument);
  cfg.loss = "mse";
  cfg.batch = 0;
  EXPECT_THROW(FusedStep::plan(cfg), std::invalid_argument);
}

// The practice's network: the fused head feeds the logits straight into the loss (no
// --output sigmoid), and the fused kernels compile leaky ReLU's default slope in (no
// --leaky-slope); both are refused with the stages that run them.
TEST(Stage08_Plan, RefusesTheSigmoidOutputAndOtherLeakySlopes) {
  const std::string output = plan_refusal("fc16,relu,fc10,sigmoid");
  EXPECT_TRUE(contains(output, "layer 4 'sigmoid'")) << output;
  EXPECT_TRUE(contains(output, "--output sigmoid runs on every other stage")) << output;
  const std::string slope = plan_refusal("conv8k3p1,leaky0.1,pool2,flatten,fc10");
  EXPECT_TRUE(contains(slope, "layer 2 'leaky0.1'")) << slope;
  EXPECT_TRUE(contains(slope, "--leaky-slope runs on every other stage")) << slope;
  EXPECT_EQ(plan_refusal("conv8k3p1,leaky,pool2,flatten,fc16,leaky,fc10"), "") << "the default slope is fused";
}

TEST(Stage08_Plan, ConvBlockShapesItCannotRunAreRefused) {
  EXPECT_THROW(make_conv_block_shape(1, 8, 8, 4, 7, 3, 2, FusedAct::ReLU), std::invalid_argument);  // 7x7
  EXPECT_THROW(make_conv_block_shape(1, 8, 8, 4, 3, 1, 3, FusedAct::ReLU), std::invalid_argument);  // pool 3
  EXPECT_THROW(make_conv_block_shape(1, 2, 2, 4, 3, 0, 2, FusedAct::ReLU), std::invalid_argument);  // empty output
  EXPECT_THROW(make_conv_block_shape(0, 8, 8, 4, 3, 1, 2, FusedAct::ReLU), std::invalid_argument);
  const ConvBlockShape odd = make_conv_block_shape(5, 13, 11, 7, 5, 2, 2, FusedAct::Tanh);
  EXPECT_EQ(odd.Ho, 13);
  EXPECT_EQ(odd.Wq, 5) << "11 conv columns pool to 5: the last one belongs to no window";
}

// The tilings of cnn's layers at batch 64 on 264 target blocks, worked by hand.
TEST(Stage08_Plan, CnnTilingsAtBatch64) {
  float* p = reinterpret_cast<float*>(16);  // any non-null address: nothing is launched
  unsigned char* m = reinterpret_cast<unsigned char*>(16);
  const ConvBlockShape conv1 = make_conv_block_shape(1, 28, 28, 16, 3, 1, 2, FusedAct::ReLU);
  const ConvBlockShape conv2 = make_conv_block_shape(16, 14, 14, 32, 3, 1, 2, FusedAct::ReLU);
  // conv1: 14x14 outputs in tiles of 14 x 4 (56 of the 64 slots), 4 tiles a plane, one example per block.
  const ConvForwardArgs f1 = plan_conv_block_forward(conv1, 64, p, p, p, p, m, 264);
  EXPECT_EQ(f1.tile_w, 14);
  EXPECT_EQ(f1.tile_h, 4);
  EXPECT_EQ(f1.tiles_h, 4);
  EXPECT_EQ(f1.images, 1);
  EXPECT_EQ(f1.blocks, 64 * 4);
  // Input tile 10 x 30 (rows 4*2 + 2, columns 14*2 + 2), one channel: 300 floats, and 9 * 16 weights.
  EXPECT_EQ(f1.smem_bytes, 4 * (300 + 144));
  // conv2: the whole 7x7 plane is one tile; 32 filters are two groups of 16: 128 blocks.
  const ConvForwardArgs f2 = plan_conv_block_forward(conv2, 64, p, p, p, p, m, 264);
  EXPECT_EQ(f2.tile_h * f2.tile_w, 49);
  EXPECT_EQ(f2.filter_groups, 2);
  EXPECT_EQ(f2.blocks, 128);
  EXPECT_EQ(f2.chans, 16) << "all 16 channels in one stage: 16 x (16 x 16 + 144) floats = 25.6 KB";
  EXPECT_EQ(f2.splits, 1) << "49 positions of 64 slots: no second part for any of them";
  // conv3 of cnn-deep: a 3 x 3 plane, 9 positions; one example a block (halved from 7 while short of
  // 264 blocks), so 64 / 9 = 7 parts share each position's 32 channels (the last slot sits idle), and
  // parts 1 .. 6 hand 4 quads x 6 parts x 9 positions x 16 sums to part 0: 3456 floats, less than the
  // stage of 32 x (8 x 8 + 144) = 6656.
  const ConvBlockShape conv3 = make_conv_block_shape(32, 7, 7, 32, 3, 1, 2, FusedAct::ReLU);
  const ConvForwardArgs f3 = plan_conv_block_forward(conv3, 64, p, p, p, p, m, 264);
  EXPECT_EQ(f3.tile_h * f3.tile_w, 9);
  EXPECT_EQ(f3.images, 1);
  EXPECT_EQ(f3.splits, 7);
  EXPECT_EQ(f3.blocks, 128);
  EXPECT_EQ(f3.smem_bytes, 4 * 6656);
  // conv1: one channel, so one part whatever the slots.
  EXPECT_EQ(f1.splits, 1);
  // conv2 backward: 16 channels (planes of 16 x 16 padded to a pitch of 257) x 16 filters = 256 pairs, one
  // thread each, 2 filter groups; 264 / 2 = 132 slices wanted of 64 examples: 1 example a slice, 64 slices;
  // dx in 4 tiles of 14 x 4.
  const ConvBackwardArgs b2 = plan_conv_block_backward(conv2, 64, p, p, p, m, p, p, p, p, 264);
  EXPECT_EQ(b2.wg_pitch, 257);
  EXPECT_EQ(b2.wg_filters, 16);
  EXPECT_EQ(b2.wg_chans, 16);
  EXPECT_EQ(b2.wg_split, 1);
  EXPECT_EQ(b2.wg_filter_groups, 2);
  EXPECT_EQ(b2.wg_slices, 64);
  EXPECT_EQ(b2.weight_blocks, 128);
  // conv1 backward (no dx): one channel; 16 filters would make 64 blocks, short of 264: 8 filters a block,
  // 8 pairs of 32 threads, 2 filter groups, 128 blocks (4 filters would leave half the threads idle).
  const ConvBackwardArgs b1 = plan_conv_block_backward(conv1, 64, p, p, p, m, p, p, p, nullptr, 264);
  EXPECT_EQ(b1.wg_pitch, 901);
  EXPECT_EQ(b1.wg_filters, 8);
  EXPECT_EQ(b1.wg_split, 32);
  EXPECT_EQ(b1.weight_blocks, 128);
  EXPECT_EQ(b1.input_blocks, 0);
  EXPECT_EQ(b2.input_blocks, 64 * 4);
  // fc1: 2 x 4 tiles of 32 x 32; 264 / 8 = 33 slices wanted, at most ceil(1568 / 32) = 49 (no slice
  // shorter than kDenseMinSlice): 33 slices of 48 (32 x 48 = 1536 would leave 32 inputs over), 264 blocks.
  unsigned int* counters = reinterpret_cast<unsigned int*>(16);
  const DenseForwardArgs d1 = plan_dense_forward(64, 1568, 100, FusedAct::ReLU, p, p, p, p, p, counters, 264, 1 << 20);
  EXPECT_EQ(d1.k_slices, 33);
  EXPECT_EQ(d1.k_len, 48);
  EXPECT_EQ(d1.blocks, 264);
  // fc2 of cnn-deep: 128 inputs, 2 x 2 tiles; slices of 32: 4 of them, 16 blocks.
  const DenseForwardArgs d2 = plan_dense_forward(64, 128, 50, FusedAct::ReLU, p, p, p, p, p, counters, 264, 1 << 20);
  EXPECT_EQ(d2.k_slices, 4);
  EXPECT_EQ(d2.blocks, 16);
  // A smaller last batch never gets more slices than the full batch's buffers hold.
  EXPECT_LE(plan_dense_forward(16, 1568, 100, FusedAct::ReLU, p, p, p, p, p, counters, 264, 5).k_slices, 5);
}

// The traffic of cnn's step, layer by layer (the floor of stages 05 and 06), worked by hand at batch 64.
TEST(Stage08_Plan, LayerByLayerTrafficOfCnn) {
  const KernelTraffic t = layerwise_traffic(parse_arch(named_model_spec("cnn")), {1, 28, 28}, 10, 64);
  // gather, 9 layers forward (flatten needs none), the loss, 9 backward (relu1 and pool1 included:
  // conv1's weight gradient needs them), the update.
  EXPECT_EQ(t.launches, 1 + 9 + 1 + 9 + 1);
  // Every number below is in floats of 4 bytes; the forward pass alone writes
  // 64 x (784 + 12544 * 2 + 3136 * 2 + 6272 * 2 + 1568 * 2 + 100 * 2 + 10): the gather, conv1, relu1,
  // pool1 (with its arg-max), conv2, relu2, pool2, fc1, relu3, fc2.
  EXPECT_GT(t.bytes_written, 4LL * 64 * (784 + 12544 * 2 + 3136 * 2 + 6272 * 2 + 1568 * 2 + 100 * 2 + 10));
}

// The dense chain's planners, worked by hand for the `mlp` (784 -> 256 -> 128 -> 10) at batch 64: shared
// memory per row (4 bytes each): the layers' inputs 784 + 256 + 128, their dz 256 + 128 + 12 (10 rounded
// up to 4), 8 warps x 32 partial sums, and a row index and label: 6 rows fit in 46 KiB, 7 do not. On 132
// multiprocessors, 3 rows a cluster: 22 clusters of 8 blocks, 176 (4 rows would leave 128).
TEST(Stage08_Plan, DenseChainOfMlp) {
  static float f[4];
  const float* w = f;
  float* y = f;
  ChainLayer layers[3] = {{784, 256, FusedAct::ReLU, w, w, y, y},
                          {256, 128, FusedAct::ReLU, w, w, y, y},
                          {128, 10, FusedAct::None, w, w, nullptr, y}};
  static int step = 0;
  static double loss = 0;
  static unsigned long long correct = 0;
  EXPECT_EQ(dense_chain_smem_bytes(layers, 3, 6), 4 * (6 * (1168 + 396 + 8 * 32) + 8 + 8));
  const auto plan = [&](int B, int min_blocks) {
    return plan_dense_chain(B, layers, 3, FusedLoss::CrossEntropy, w, &step, &step, &step, 64, y, &loss, &correct,
                            min_blocks);
  };
  const DenseChainArgs a = plan(64, 132);
  EXPECT_EQ(a.rows, 3);
  EXPECT_EQ(a.clusters, 22) << "ceil(64 / 3)";
  EXPECT_EQ(a.blocks, 22 * kChainCluster);
  EXPECT_EQ(a.smem_bytes, dense_chain_smem_bytes(layers, 3, 3));
  EXPECT_EQ(plan(64, 0).rows, 6) << "no floor on the blocks: as many rows as fit";
  EXPECT_LE(dense_chain_smem_bytes(layers, 3, 6), kFusedSharedBudget);
  EXPECT_GT(dense_chain_smem_bytes(layers, 3, 7), kFusedSharedBudget);
  EXPECT_EQ(plan(4, 0).rows, 4) << "no more rows than examples";
  EXPECT_EQ(plan(4, 132).rows, 1) << "at least one";
  EXPECT_EQ(plan(64, 132).B, 64);
  const long long w_off[3] = {0, 200960, 233856}, b_off[3] = {200704, 233728, 235136};
  static float p[1];
  const DenseChainUpdateArgs u = plan_dense_chain_update(64, layers, 3, y, w_off, b_off, p, p, p, &step);
  EXPECT_EQ(u.layer[0].o_tiles * u.layer[0].i_tiles, 8 * 25) << "256 / 32 by ceil(784 / 32)";
  EXPECT_EQ(u.layer[1].first_block, 200);
  EXPECT_EQ(u.layer[2].first_block, 200 + 4 * 8);
  EXPECT_EQ(u.blocks, 200 + 32 + 1 * 4);
  EXPECT_EQ(u.smem_bytes, 4 * 64 * (32 + 32 + 4)) << "64 examples of a dz tile and of an x tile (pitch 36)";
  EXPECT_EQ(u.layer[1].x, y) << "a layer's input is the output of the one below";
  // Refused: a layer that does not take the one below's outputs, too many classes, too many layers.
  ChainLayer broken[3] = {layers[0], layers[1], layers[2]};
  broken[1].IN = 255;
  EXPECT_THROW(plan_dense_chain(64, broken, 3, FusedLoss::CrossEntropy, w, &step, &step, &step, 64, y, &loss, &correct,
                                132),
               std::invalid_argument);
  broken[1].IN = 256;
  broken[2].OUT = kHeadMaxClasses + 1;
  EXPECT_THROW(plan_dense_chain_update(64, broken, 3, y, w_off, b_off, p, p, p, &step), std::invalid_argument);
  ChainLayer many[kChainMaxLayers + 1];
  for (ChainLayer& l : many) l = {8, 8, FusedAct::ReLU, w, w, y, y};
  EXPECT_THROW(plan_dense_chain(64, many, kChainMaxLayers + 1, FusedLoss::CrossEntropy, w, &step, &step, &step, 64, y,
                                &loss, &correct, 132),
               std::invalid_argument);
}
