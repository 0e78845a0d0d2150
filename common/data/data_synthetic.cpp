/// @file data_synthetic.cpp
/// @brief The built-in synthetic data set: every trainer and test runs with nothing installed.
///
/// Each class has a fixed picture (its *pattern*): on every channel three soft
/// bright blobs at class-specific places over a faint striped texture whose
/// direction and spacing also depend on the class. An example is its class's
/// pattern, shifted by up to two pixels, dimmed or brightened a little, on a
/// slightly grey background, with uniform noise on every pixel, clamped to
/// [0, 1]. A linear model already separates the classes well; the shifts give
/// a CNN's weight sharing something to win.
///
/// The patterns depend only on the shape and the class, never on the seed, so a
/// training set and a test set drawn with two seeds show the same classes.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/data/data.hpp"
#include "common/core/rng.hpp"

namespace course {

namespace {

/// Seed of the class patterns: fixed, so that they are the same for every seed.
constexpr std::uint64_t kPatternSeed = 0x5EED'C1A5'5E5ULL;

/// The pattern of class k: shape.size() values in [0, 1].
std::vector<float> class_pattern(Shape3 shape, int k) {
  const int H = shape.h, W = shape.w;
  std::vector<float> p(static_cast<std::size_t>(shape.size()));
  Rng t(kPatternSeed, static_cast<std::uint64_t>(k));
  if (H * W == 1) {
    // A plain vector (e.g. CSV-like [D, 1, 1]) has no pixels to place blobs on:
    // the pattern is a class-specific level per feature instead.
    for (float& v : p) v = static_cast<float>(t.uniform(0.1, 0.9));
    return p;
  }
  const double pi = 3.14159265358979323846;
  const double angle = t.uniform(0.0, pi);    // stripe direction
  const double period = t.uniform(3.0, 7.0);  // stripe spacing, pixels
  const double phase = t.uniform(0.0, 2 * pi);
  const double sigma = std::max(0.75, 0.07 * std::min(H, W));  // blob radius, about 2 px at 28x28
  for (int c = 0; c < shape.c; ++c) {
    double cy[3], cx[3], amp[3];
    for (int b = 0; b < 3; ++b) {
      cy[b] = t.uniform(0.15, 0.85) * (H - 1);
      cx[b] = t.uniform(0.15, 0.85) * (W - 1);
      amp[b] = t.uniform(0.6, 1.0);
    }
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x) {
        double v =
            0.3 *
            (0.5 + 0.5 * std::cos(2 * pi / period * (x * std::cos(angle) + y * std::sin(angle)) + phase));
        for (int b = 0; b < 3; ++b) {
          const double d2 = (y - cy[b]) * (y - cy[b]) + (x - cx[b]) * (x - cx[b]);
          v += amp[b] * std::exp(-d2 / (2 * sigma * sigma));
        }
        p[static_cast<std::size_t>((c * H + y) * W + x)] = static_cast<float>(std::min(v, 1.0));
      }
  }
  return p;
}

}  // namespace

Dataset make_synthetic(int n, Shape3 shape, int classes, std::uint64_t seed) {
  if (n < 0) throw std::invalid_argument("make_synthetic: n must be >= 0, got " + std::to_string(n));
  if (shape.c < 1 || shape.h < 1 || shape.w < 1)
    throw std::invalid_argument("make_synthetic: bad shape " + shape.str());
  if (classes < 1)
    throw std::invalid_argument("make_synthetic: classes must be >= 1, got " + std::to_string(classes));

  Dataset d;
  d.name = "synthetic";
  d.source = "built-in";
  d.shape = shape;
  d.classes = classes;
  for (int k = 0; k < classes; ++k) d.class_names.push_back("class " + std::to_string(k));

  std::vector<std::vector<float>> patterns;
  for (int k = 0; k < classes; ++k) patterns.push_back(class_pattern(shape, k));

  // Stream 7 keeps these draws apart from the trainers' weight and shuffle streams.
  Rng rng(seed, 7);
  // Balanced classes (n / classes each, the rest spread over the first ones), in random order.
  d.labels.resize(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) d.labels[static_cast<std::size_t>(i)] = i % classes;
  for (int i = n - 1; i > 0; --i)
    std::swap(d.labels[static_cast<std::size_t>(i)],
              d.labels[static_cast<std::size_t>(rng.below(static_cast<std::uint64_t>(i) + 1))]);

  const int H = shape.h, W = shape.w;
  const int max_shift = std::min(H, W) / 14;  // 2 pixels at 28x28 and 32x32; none for small inputs
  d.images.resize(static_cast<std::size_t>(n * shape.size()));
  for (int i = 0; i < n; ++i) {
    const std::vector<float>& p = patterns[static_cast<std::size_t>(d.labels[static_cast<std::size_t>(i)])];
    const int dy = static_cast<int>(rng.below(2 * max_shift + 1)) - max_shift;
    const int dx = static_cast<int>(rng.below(2 * max_shift + 1)) - max_shift;
    const double gain = rng.uniform(0.75, 1.0);
    const double background = rng.uniform(0.0, 0.1);
    float* out = d.images.data() + static_cast<std::size_t>(i) * shape.size();
    for (int c = 0; c < shape.c; ++c)
      for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) {
          // The pattern moved by (dy, dx); what moves in from outside is dark.
          const int sy = y - dy, sx = x - dx;
          const double v = (sy >= 0 && sy < H && sx >= 0 && sx < W)
                               ? p[static_cast<std::size_t>((c * H + sy) * W + sx)]
                               : 0.0;
          const double noisy = background + gain * v + rng.uniform(-0.2, 0.2);
          *out++ = static_cast<float>(std::clamp(noisy, 0.0, 1.0));
        }
  }
  return d;
}

}  // namespace course
