/// @file arch.hpp
/// @brief Architecture spec strings: the named models and custom ones.
///
/// A spec is a comma-separated list of layers, read left to right:
///
/// | token              | layer                                                  |
/// |--------------------|--------------------------------------------------------|
/// | `fc<N>`            | dense layer with N outputs (flattens its input)        |
/// | `conv<F>k<K>[p<P>][s<S>]` | F filters of K x K, padding P (0), stride S (1) |
/// | `pool<K>[s<S>][p<P>]` | max-pool K x K, stride S (K), padding P (0)         |
/// | `avgpool<K>[s<S>][p<P>]` | average-pool K x K, stride S (K), padding P (0)  |
/// | `flatten`          | [C, H, W] -> [C*H*W]                                    |
/// | `relu` `leaky[<A>]` `sigmoid` `tanh` `softplus` | activation                 |
///
/// `leaky` is leaky ReLU with slope kDefaultLeakySlope (0.01) for x <= 0; `leaky<A>`
/// (e.g. `leaky0.1`, decimal digits, 0 < A < 1) gives it slope A. The canonical spec
/// writes the slope only when it is not the default (`--leaky-slope A` sets it).
///
/// The last layer must be `fc<classes>`, whose outputs (the logits) go to softmax
/// cross-entropy; or `fc<classes>,sigmoid`: the **output activation** that
/// `--output sigmoid` appends, for a network trained with `--loss mse` on
/// sigmoid(z) (output_activation(), check_output_activation()). Either way the
/// predicted class is the arg-max of the last layer's outputs.
///
/// **Pooling windows and padding** (both kinds, every stage). Window (i, j) covers
/// rows i*S - P .. i*S - P + K - 1 (columns likewise), and Ho = floor((H + 2P - K) / S) + 1,
/// so no window reaches past the padded input. Padding must be smaller than the
/// window, 0 <= P < K: then every window holds at least one image cell (the first
/// one covers rows -P .. K-1-P, which reach row 0 exactly when P <= K - 1). With
/// P >= K the first and last windows hold only padding: a max-pool there has no
/// cell to take (padding never wins a max), and an average is a constant 0 that
/// carries no gradient. The course refuses such a layer, at parse time and in
/// every stage's geometry check. (PyTorch refuses more: it needs P <= K/2. The
/// max-pooling study's "k 2 s 2, padding 2" is such a layer: its output is the
/// unpadded pool's with a border of constant cells added, see lesson 02.)
///
/// - `pool`: padded cells never win (the window is cut to the image); ties go to
///   the first maximum in row-major window order.
/// - `avgpool`: the sum of the window's image cells divided by K*K, whatever the
///   padding: padded cells count as zeros (PyTorch's count_include_pad=True, its
///   default, and cuDNN's CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING). So every
///   output is the same linear map of its window, and its gradient spreads
///   dy / (K*K) to each image cell of the window.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace course {

/// The shape of one example: channels, height, width (a vector is [D, 1, 1]).
struct Shape3 {
  int c = 0, h = 1, w = 1;
  long size() const { return static_cast<long>(c) * h * w; }
  bool operator==(const Shape3& o) const { return c == o.c && h == o.h && w == o.w; }
  std::string str() const;  ///< "1x28x28"
};

/// The kinds of layer. New kinds go at the end: the number of a kind keys layer names
/// (fc1, pool1, avgpool1, ...) in every stage.
enum class LayerKind { Dense, Conv, MaxPool, Flatten, Activation, AvgPool };

/// True for the two pooling kinds (max and average), which share a window geometry.
inline bool is_pool(LayerKind k) { return k == LayerKind::MaxPool || k == LayerKind::AvgPool; }
enum class Activation { ReLU, LeakyReLU, Sigmoid, Tanh, Softplus };

/// Name of an activation as written in specs ("relu").
const char* activation_name(Activation a);

/// Leaky ReLU's slope for x <= 0 unless a spec (`leaky0.1`) or `--leaky-slope` says otherwise.
inline constexpr double kDefaultLeakySlope = 0.01;

/// A leaky ReLU slope as a spec writes it: the shortest plain decimal that reads back
/// as the same double ("0.1", "0.00001"; never an exponent).
std::string slope_text(double slope);

/// One layer of a spec.
struct LayerSpec {
  LayerKind kind = LayerKind::Dense;
  int units = 0;   ///< dense outputs, or conv filters
  int kernel = 0;  ///< conv / pool window (K)
  int stride = 1;
  int pad = 0;
  Activation act = Activation::ReLU;  ///< for LayerKind::Activation
  double slope = kDefaultLeakySlope;  ///< for Activation::LeakyReLU: the slope for x <= 0, in (0, 1)
  std::string token() const;          ///< canonical text, e.g. "conv16k3p1", "avgpool3s1p1", "leaky0.1"
};

/// A parsed architecture.
struct Arch {
  std::vector<LayerSpec> layers;
  std::string spec() const;  ///< canonical spec string, comma-separated
  bool has_conv() const;     ///< true if any conv or pool (max or average) layer is present: the model needs an image
};

/// Parses a spec string; throws std::invalid_argument naming the bad token and
/// its position ("layer 3 'conv16x3': expected conv<F>k<K>[p<P>][s<S>]").
Arch parse_arch(const std::string& spec);

/// The output activations `--output` accepts: "none" and "sigmoid".
const std::vector<std::string>& output_activation_names();

/// The output activation of `arch`: the activation that follows its last dense
/// layer when the spec ends with one (`fc3,sigmoid`), else nullopt (the spec ends
/// with the logits, `fc3`).
std::optional<Activation> output_activation(const Arch& arch);

/// `arch` with the output activation `output` ("none", "sigmoid") appended:
/// "none" returns it unchanged. Throws std::invalid_argument for another name,
/// or when the spec ends with an activation already.
Arch with_output_activation(Arch arch, const std::string& output);

/// Throws std::invalid_argument when `arch` has an output activation and
/// `loss` is not "mse": softmax cross-entropy takes the logits themselves
/// (its softmax is its own output activation), so a sigmoid before it would
/// squash the logits into (0, 1) and the classes could barely be told apart.
void check_output_activation(const Arch& arch, const std::string& loss);

/// `arch` with every leaky ReLU's slope set to `slope` (--leaky-slope).
/// `slope` == kDefaultLeakySlope leaves the spec's own slopes as they are.
/// Throws std::invalid_argument for a slope outside (0, 1), or when a layer of
/// the spec names another slope than the default and than `slope` (`leaky0.2`
/// with --leaky-slope 0.1: which one was meant?).
Arch with_leaky_slope(Arch arch, double slope);

/// True when a layer of `arch` is a leaky ReLU; with `other_slope`, only one whose
/// slope is not kDefaultLeakySlope (for the stages that run the default alone).
bool has_leaky_relu(const Arch& arch, bool other_slope = false);

/// The spec of a named model; throws on an unknown name.
///
/// - `mlp`, `cnn`, `cnn-deep`: the course's models; they take the data set's input shape.
/// - `m0` .. `m4`: the models of the bachelor's thesis the course grew out of
///   (docs/replication.md), each defined on its own input (named_model_input())
///   and with its own training recipe (named_model_recipe()). ReLU follows every
///   conv and hidden dense layer, as in `cnn`; `m0` and `m1` have `cnn`'s layers,
///   `m2` has `cnn-deep`'s; only the input differs. `m3` and `m4` are the course's
///   two larger models for the thesis's Fig 5.4 (CUDA against cuDNN over five
///   models of rising complexity), on M1 and M2's 3x40x40 input.
///
/// Forward FLOPs per image (2 per multiply-add of the conv and dense layers; pools
/// and activations, under 1% of each, left out) and parameters (weights + biases),
/// checked by tests/common/arch_test.cpp:
///
/// | model | input   | conv blocks (conv 3x3 pad 1 + ReLU, then max-pool 2) | dense      | FLOPs       | params    |
/// |-------|---------|------------------------------------------------------|------------|-------------|-----------|
/// | m0    | 3x32x32 | 16, 32                                               | 100, 10    |   3,655,632 |   210,998 |
/// | m1    | 3x40x40 | 16, 32                                               | 100, 10    |   5,710,800 |   326,198 |
/// | m2    | 3x40x40 | 16, 32, 32                                           | 128, 50, 10 |  7,130,600 |   123,824 |
/// | m3    | 3x40x40 | 32, 64, 64 (m2 twice as wide)                        | 128, 50, 10 | 25,306,600 |   268,208 |
/// | m4    | 3x40x40 | 32+32, 64+64, 128+128 (two convs a block)            | 256, 50, 10 | 122,394,600 | 1,119,824 |
///
/// Each model does 1.2x to 4.8x the work of the one before (m0 -> m4: 33x).
std::string named_model_spec(const std::string& name);
/// The names accepted by named_model_spec().
std::vector<std::string> named_models();

/// The input a named model was defined on (m0: 3x32x32; m1 .. m4: 3x40x40), or
/// nullopt for the models that take the data set's shape (mlp, cnn, cnn-deep).
/// The trainer turns the data into it (course::implied_model_input).
/// Throws std::invalid_argument on an unknown name.
std::optional<Shape3> named_model_input(const std::string& name);

/// How the thesis trained a model: minibatch size, images per epoch, learning rate.
struct TrainingRecipe {
  int batch = 32;
  int images = 0;     ///< training images per epoch (the first N: --limit N)
  double lr = 0;
};
/// The thesis's recipe of a named model (m0, m1: batch 32, 1,000 images, lr 0.001;
/// m2: batch 32, 2,000 images, lr 0.00001; m3, m4, the course's, take m2's), or
/// nullopt for mlp, cnn, cnn-deep. Throws std::invalid_argument on an unknown name.
std::optional<TrainingRecipe> named_model_recipe(const std::string& name);

/// Spec for `--layers 784,256,128,10`: sizes of every layer, input first. A hidden
/// size may carry its activation (`256:tanh`); otherwise `activation` is used.
/// The first size must equal the input size, the last the number of classes.
std::string spec_from_layer_sizes(const std::string& sizes, const std::string& activation,
                                  long input_size, int classes);

/// Output shape of every layer for an input of shape `input` (element i is the
/// output of layer i). Throws std::invalid_argument when a layer does not fit
/// (window larger than its padded input, a spec that does not end in
/// fc<classes> or fc<classes>,sigmoid, ...) or is too large: more than 2^31 - 1 values in the input,
/// in one layer's output per example, or in one layer's weights (every stage
/// indexes them with int).
std::vector<Shape3> layer_shapes(const Arch& arch, Shape3 input, int classes);

}  // namespace course
