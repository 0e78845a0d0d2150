/// @file data_transform.hpp
/// @brief What the trainer does to a data set after loading it: --resize
/// (bilinear), --channels, and the --val-fraction split.
///
/// The thesis the course reproduces trains on 3x32x32 and 3x40x40 inputs, and
/// no RGB data set ships offline: `--resize 40 --channels 3` turns
/// Fashion-MNIST into 3x40x40 examples (each 28x28 gray picture resized, then
/// repeated over three channels), and `--model m1` does the same by itself
/// (course::implied_model_input). The timings of a run depend on the shapes
/// (the input, the model, the batch), not on what the pictures show, so such a
/// run times the thesis's models faithfully; its accuracy is Fashion-MNIST's.
///
/// load_data() applies these in one place, in this order: the data set is
/// loaded, `--limit` keeps the first N training examples, the training and
/// test sets are resized and their channels converted, and then the
/// validation set is split off the (limited) training set. Resizing and
/// converting work on each example alone, so doing them after --limit gives
/// the same examples as doing them first, without resizing 60000 pictures
/// to keep 1000.
#pragma once

#include <cstdint>
#include <string>

#include "common/model/arch.hpp"
#include "common/data/data.hpp"

namespace course {

/// The largest side --resize accepts. With at most kMaxChannels channels, one
/// example stays below 2^31 values (64 x 4096 x 4096 = 2^30), the int limit
/// the stages' layer shapes are checked against (course::layer_shapes).
constexpr int kMaxResizeSide = 4096;
/// The most channels --channels accepts.
constexpr int kMaxChannels = 64;

/// The stream of course::Rng (with --seed) that draws the validation split.
/// The other streams of the course: 0 the initial weights, 7 the synthetic
/// set, 77 the gradient checker, 1000 + epoch the epoch shuffles.
constexpr std::uint64_t kValidationSplitStream = 500;

/// Reads --resize's value: "N" (N x N) or "HxW" (height first, as in the
/// shape 3x40x40), each side 1 to kMaxResizeSide. Throws
/// std::invalid_argument with a message that names --resize.
ImageSize parse_image_size(const std::string& text);

/// Resizes one plane of h x w values to oh x ow values, bilinearly.
///
/// The convention is PyTorch's F.interpolate(mode='bilinear',
/// align_corners=False) and OpenCV's INTER_LINEAR: pixels are squares and
/// their values sit at their centres, so output pixel x samples the input at
/// sx = (x + 0.5) * w / ow - 0.5 (clamped to 0 below), between input pixels
/// floor(sx) and floor(sx) + 1 (the last pixel repeats past the edge), and
/// the same along y. Consequences the tests check: the same size gives the
/// same values; a constant picture stays constant; 2x upscaling of [a, b]
/// gives [a, 0.75a + 0.25b, 0.25a + 0.75b, b]; halving averages 2x2 blocks.
/// Shrinking by more than 2 does not average every pixel it drops (no
/// antialiasing, as in both libraries by default).
/// Every side must be at least 1; `dst` must not overlap `src`.
void resize_bilinear(const float* src, int h, int w, float* dst, int oh, int ow);

/// Resizes every example of `data` to size.h x size.w (each channel on its
/// own, with resize_bilinear). Nothing happens when it has that size already.
void resize_examples(Dataset& data, ImageSize size);

/// Converts every example of `data` to `channels` channels: from 1, the gray
/// plane is repeated; to 1, the channels are averaged (equal weights, not a
/// luma formula); to the same count, nothing happens. Any other change
/// (3 -> 4) throws std::invalid_argument naming --channels.
void convert_channels(Dataset& data, int channels);

/// --resize and --channels on a training and a test set (size empty and
/// channels 0: keep them). Refuses with std::invalid_argument, naming the
/// flag: a csv set (its examples are feature vectors, not pictures), a
/// channel change convert_channels() refuses, and a result that would need
/// more memory than the machine has. Returns what was done, for the data
/// line ("resized 28x28 -> 40x40 (bilinear), 1 -> 3 channels"), or "" when
/// nothing changed.
std::string transform_examples(Dataset& train, Dataset& test, ImageSize size, int channels);

/// Holds out round(fraction * n) examples of `train` (n = train.size(), at
/// least 1 when fraction > 0) as a validation set and returns it; `train`
/// keeps the others. Which examples: the last ones of a Fisher-Yates shuffle
/// of 0..n-1 drawn from course::Rng(seed, kValidationSplitStream), so the
/// split depends on --seed and on nothing else. Both sets keep the examples
/// in their original order. fraction 0 returns an empty set (of the same
/// shape and classes) and leaves `train` as it was. Throws
/// std::invalid_argument, naming --val-fraction, for a fraction outside
/// [0, 1) or one that leaves no training example.
Dataset split_validation(Dataset& train, double fraction, std::uint64_t seed);

}  // namespace course
