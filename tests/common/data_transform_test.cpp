// Tests of common/data/data_transform: --resize (bilinear, against values worked out
// by hand and the properties of the convention), --channels, and the
// --val-fraction split, alone and through load_data().
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/data/data.hpp"
#include "common/data/load_data.hpp"
#include "common/data/data_transform.hpp"
#include "common/core/rng.hpp"
#include "error_of.hpp"

namespace course {
namespace {

using testing::HasSubstr;

using course::testkit::error_of;

std::vector<float> resized(const std::vector<float>& src, int h, int w, int oh, int ow) {
  std::vector<float> dst(static_cast<std::size_t>(oh) * ow, -1.0f);
  resize_bilinear(src.data(), h, w, dst.data(), oh, ow);
  return dst;
}

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-6f) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

std::vector<float> random_plane(int n, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = static_cast<float>(rng.uniform());
  return v;
}

/// n examples of shape `shape` whose values encode (example, position), and labels i % 3.
Dataset numbered(int n, Shape3 shape) {
  Dataset d;
  d.name = "numbered";
  d.shape = shape;
  d.classes = 3;
  d.class_names = {"0", "1", "2"};
  for (int i = 0; i < n; ++i) {
    for (long j = 0; j < shape.size(); ++j)
      d.images.push_back(static_cast<float>((i * 131 + j * 7) % 256) / 255.0f);
    d.labels.push_back(i % 3);
  }
  return d;
}

// ---- --resize's value --------------------------------------------------------------

TEST(DataTransformSize, ParsesNAndHxW) {
  EXPECT_EQ(parse_image_size("32"), (ImageSize{32, 32}));
  EXPECT_EQ(parse_image_size("40x30"), (ImageSize{40, 30}));
  EXPECT_EQ(parse_image_size("1X4096"), (ImageSize{1, 4096}));
  EXPECT_EQ(parse_image_size("40x30").str(), "40x30");
  for (const std::string bad : {"", "0", "-3", "4097", "abc", "3x", "x3", "3x0", "2x-2", "1.5", "3x3x3", " 3",
                                "99999999999999999999"}) {
    const std::string e = error_of<std::invalid_argument>([&] { parse_image_size(bad); });
    EXPECT_THAT(e, HasSubstr("--resize")) << bad;
    EXPECT_THAT(e, HasSubstr("'" + bad + "'")) << bad;
  }
}

// ---- resize_bilinear -----------------------------------------------------------------

TEST(DataTransformResize, SameSizeIsTheIdentity) {
  const std::vector<float> src = random_plane(5 * 7, 1);
  EXPECT_EQ(resized(src, 5, 7, 5, 7), src) << "bit for bit";
}

TEST(DataTransformResize, ConstantStaysConstant) {
  const std::vector<float> src(3 * 4, 0.3f);
  for (const auto& [oh, ow] : std::vector<std::pair<int, int>>{{7, 9}, {2, 2}, {1, 1}, {3, 13}, {40, 40}})
    EXPECT_EQ(resized(src, 3, 4, oh, ow), std::vector<float>(static_cast<std::size_t>(oh) * ow, 0.3f)) << oh << "x" << ow;
}

// Pixel centres (align_corners false): output x samples input (x + 0.5) * w / ow - 0.5.
TEST(DataTransformResize, TwiceAsLargeByHand) {
  // 1D: sample points -0.25 (clamped to 0), 0.25, 0.75, 1.25 (past the last pixel: the last pixel).
  expect_near_all(resized({0.0f, 1.0f}, 1, 2, 1, 4), {0.0f, 0.25f, 0.75f, 1.0f});
  // 2D: the same weights along y.
  expect_near_all(resized({0, 1, 2, 3}, 2, 2, 4, 4),
                  {0.0f, 0.25f, 0.75f, 1.0f,    //
                   0.5f, 0.75f, 1.25f, 1.5f,    //
                   1.5f, 1.75f, 2.25f, 2.5f,    //
                   2.0f, 2.25f, 2.75f, 3.0f});  // what torch F.interpolate(align_corners=False) gives
}

TEST(DataTransformResize, OtherScalesByHand) {
  // 3 -> 2: scale 1.5, samples at 0.25 and 1.75.
  expect_near_all(resized({0.0f, 1.0f, 0.5f}, 1, 3, 1, 2), {0.25f, 0.625f});
  // 3 -> 5: scale 0.6, samples at -0.2 (-> 0), 0.4, 1.0, 1.6, 2.2 (-> the last pixel).
  expect_near_all(resized({0.0f, 1.0f, 0.5f}, 1, 3, 1, 5), {0.0f, 0.4f, 1.0f, 0.7f, 0.5f});
  // 28 -> 40 along a ramp: interior samples are (x + 0.5) * 0.7 - 0.5 on the ramp itself.
  std::vector<float> ramp(28);
  for (int i = 0; i < 28; ++i) ramp[static_cast<std::size_t>(i)] = static_cast<float>(i) / 27.0f;
  const std::vector<float> out = resized(ramp, 1, 28, 1, 40);
  for (int x = 0; x < 40; ++x) {
    const double s = std::min(std::max((x + 0.5) * 28.0 / 40.0 - 0.5, 0.0), 27.0);
    EXPECT_NEAR(out[static_cast<std::size_t>(x)], s / 27.0, 1e-6) << x;
  }
}

TEST(DataTransformResize, HalvingAveragesTwoByTwoBlocks) {
  const std::vector<float> src = random_plane(4 * 6, 2);
  const std::vector<float> out = resized(src, 4, 6, 2, 3);
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 3; ++x) {
      auto at = [&](int yy, int xx) { return src[static_cast<std::size_t>(yy * 6 + xx)]; };
      const float mean = (at(2 * y, 2 * x) + at(2 * y, 2 * x + 1) + at(2 * y + 1, 2 * x) + at(2 * y + 1, 2 * x + 1)) / 4;
      EXPECT_NEAR(out[static_cast<std::size_t>(y * 3 + x)], mean, 1e-6f) << y << "," << x;
    }
}

TEST(DataTransformResize, StaysWithinTheInputRange) {
  const std::vector<float> src = random_plane(9 * 5, 3);
  const auto [lo, hi] = std::minmax_element(src.begin(), src.end());
  for (const auto& [oh, ow] : std::vector<std::pair<int, int>>{{1, 1}, {17, 3}, {40, 40}, {2, 11}, {9, 5}})
    for (float v : resized(src, 9, 5, oh, ow)) {
      EXPECT_GE(v, *lo);
      EXPECT_LE(v, *hi);
    }
  EXPECT_THROW(resized(src, 9, 5, 0, 3), std::invalid_argument);
}

// ---- whole data sets -------------------------------------------------------------------

TEST(DataTransformExamples, ResizesEachPlaneOnItsOwn) {
  Dataset d = numbered(3, Shape3{2, 3, 4});
  const Dataset before = d;
  resize_examples(d, ImageSize{5, 2});
  EXPECT_EQ(d.shape, (Shape3{2, 5, 2}));
  ASSERT_EQ(d.images.size(), 3u * 2 * 5 * 2);
  for (int i = 0; i < 3; ++i)
    for (int c = 0; c < 2; ++c) {
      std::vector<float> plane(before.image(i) + c * 12, before.image(i) + (c + 1) * 12);
      const std::vector<float> want = resized(plane, 3, 4, 5, 2);
      EXPECT_TRUE(std::equal(want.begin(), want.end(), d.image(i) + c * 10)) << i << "," << c;
    }
  EXPECT_EQ(d.labels, before.labels);
  Dataset same = before;
  resize_examples(same, ImageSize{3, 4});
  EXPECT_EQ(same.images, before.images);
  resize_examples(same, ImageSize{});
  EXPECT_EQ(same.images, before.images);
}

TEST(DataTransformExamples, ChannelsRepeatOrAverage) {
  Dataset gray = numbered(2, Shape3{1, 2, 2});
  Dataset three = gray;
  convert_channels(three, 3);
  EXPECT_EQ(three.shape, (Shape3{3, 2, 2}));
  for (int i = 0; i < 2; ++i)
    for (int c = 0; c < 3; ++c) EXPECT_TRUE(std::equal(gray.image(i), gray.image(i) + 4, three.image(i) + c * 4));

  Dataset rgb;
  rgb.name = "rgb";
  rgb.shape = Shape3{3, 1, 2};
  rgb.classes = 1;
  rgb.images = {0.0f, 0.3f, 0.6f, 0.9f, 0.3f, 1.0f};  // R plane, G plane, B plane
  rgb.labels = {0};
  convert_channels(rgb, 1);
  EXPECT_EQ(rgb.shape, (Shape3{1, 1, 2}));
  expect_near_all(rgb.images, {0.3f, 0.7333333f});

  Dataset same = gray;
  convert_channels(same, 1);
  EXPECT_EQ(same.images, gray.images);
  Dataset four = numbered(1, Shape3{3, 2, 2});
  const std::string e = error_of<std::invalid_argument>([&] { convert_channels(four, 4); });
  EXPECT_THAT(e, HasSubstr("--channels 4"));
  EXPECT_THAT(e, HasSubstr("3-channel"));
}

TEST(DataTransformExamples, TransformSaysWhatItDid) {
  Dataset train = numbered(4, Shape3{1, 28, 28}), test = numbered(2, Shape3{1, 28, 28});
  train.name = test.name = "fashion-mnist";
  EXPECT_EQ(transform_examples(train, test, ImageSize{}, 0), "");
  EXPECT_EQ(transform_examples(train, test, ImageSize{28, 28}, 1), "") << "already so: nothing to say";
  EXPECT_EQ(transform_examples(train, test, ImageSize{40, 40}, 3), "resized 28x28 -> 40x40 (bilinear), 1 -> 3 channels");
  EXPECT_EQ(train.shape, (Shape3{3, 40, 40}));
  EXPECT_EQ(test.shape, (Shape3{3, 40, 40}));
  EXPECT_EQ(test.images.size(), 2u * 3 * 40 * 40);
  EXPECT_EQ(transform_examples(train, test, ImageSize{}, 1), "3 -> 1 channel (averaged)");
  EXPECT_EQ(transform_examples(train, test, ImageSize{32, 20}, 0), "resized 40x40 -> 32x20 (bilinear)");
  EXPECT_EQ(test.shape, (Shape3{1, 32, 20}));

  Dataset csv = numbered(2, Shape3{4, 1, 1}), csv_test = numbered(1, Shape3{4, 1, 1});
  csv.name = "csv";
  EXPECT_THAT(error_of<std::invalid_argument>([&] { transform_examples(csv, csv_test, ImageSize{8, 8}, 0); }),
              HasSubstr("--resize: the csv data set's examples are feature vectors"));
  Dataset rgb = numbered(1, Shape3{3, 2, 2}), rgb_test = numbered(1, Shape3{3, 2, 2});
  EXPECT_THAT(error_of<std::invalid_argument>([&] { transform_examples(rgb, rgb_test, ImageSize{}, 2); }),
              HasSubstr("--channels 2: cannot turn"));
}

TEST(DataTransformExamples, RefusesWhatCannotFitInMemory) {
  // 70000 examples of 3x4096x4096 floats: 14 TB, refused before anything is allocated.
  Dataset train, test;
  train.name = "fashion-mnist";
  train.shape = test.shape = Shape3{1, 1, 1};
  train.labels.assign(60000, 0);
  train.images.assign(60000, 0.5f);
  test.labels.assign(10000, 0);
  test.images.assign(10000, 0.5f);
  const std::string e =
      error_of<std::invalid_argument>([&] { transform_examples(train, test, ImageSize{4096, 4096}, 3); });
  EXPECT_THAT(e, HasSubstr("--resize and --channels: the 60000 training and 10000 test examples would take"));
  EXPECT_THAT(e, HasSubstr("as 3x4096x4096 floats, more than this machine's"));
  EXPECT_THAT(e, HasSubstr("use --limit"));
  EXPECT_EQ(train.shape, (Shape3{1, 1, 1})) << "left as it was";
}

// ---- the validation split --------------------------------------------------------------

TEST(DataTransformValidation, HoldsOutTheRoundedShareAndKeepsTheRest) {
  const Dataset all = numbered(200, Shape3{1, 1, 2});
  Dataset train = all;
  const Dataset val = split_validation(train, 0.1, 42);
  EXPECT_EQ(val.size(), 20);
  EXPECT_EQ(train.size(), 180);
  EXPECT_EQ(val.shape, all.shape);
  EXPECT_EQ(val.classes, 3);
  EXPECT_EQ(val.class_names, all.class_names);
  EXPECT_EQ(static_cast<long>(val.images.size()), 20 * all.shape.size());
  // Every example lands in exactly one of the two (whole: all its values, with its label).
  std::multiset<std::vector<float>> got, want;
  for (const Dataset* d : {static_cast<const Dataset*>(&train), &val})
    for (int i = 0; i < d->size(); ++i) {
      std::vector<float> x(d->image(i), d->image(i) + 2);
      x.push_back(static_cast<float>(d->labels[static_cast<std::size_t>(i)]));
      got.insert(x);
    }
  for (int i = 0; i < all.size(); ++i) {
    std::vector<float> x(all.image(i), all.image(i) + 2);
    x.push_back(static_cast<float>(all.labels[static_cast<std::size_t>(i)]));
    want.insert(x);
  }
  EXPECT_EQ(got, want);
}
// Examples told apart by their index: value i, label i % 3.
Dataset indexed(int n) {
  Dataset d;
  d.name = "indexed";
  d.shape = Shape3{1, 1, 1};
  d.classes = 3;
  d.class_names = {"0", "1", "2"};
  for (int i = 0; i < n; ++i) {
    d.images.push_back(static_cast<float>(i));
    d.labels.push_back(i % 3);
  }
  return d;
}

std::vector<int> indices(const Dataset& d) {
  std::vector<int> v;
  for (int i = 0; i < d.size(); ++i) {
    v.push_back(static_cast<int>(d.image(i)[0]));
    EXPECT_EQ(d.labels[static_cast<std::size_t>(i)], v.back() % 3) << "a label left its example";
  }
  return v;
}

TEST(DataTransformValidation, APartitionInOriginalOrderDrawnFromTheSeed) {
  Dataset train = indexed(200);
  const Dataset val = split_validation(train, 0.1, 42);
  const std::vector<int> t = indices(train), v = indices(val);
  EXPECT_EQ(t.size(), 180u);
  EXPECT_EQ(v.size(), 20u);
  EXPECT_TRUE(std::is_sorted(t.begin(), t.end()));
  EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
  std::vector<int> both = t;
  both.insert(both.end(), v.begin(), v.end());
  std::sort(both.begin(), both.end());
  for (int i = 0; i < 200; ++i) EXPECT_EQ(both[static_cast<std::size_t>(i)], i);

  // The last 20 of a Fisher-Yates shuffle of Rng(42, kValidationSplitStream).
  std::vector<int> order(200);
  for (int i = 0; i < 200; ++i) order[static_cast<std::size_t>(i)] = i;
  Rng rng(42, kValidationSplitStream);
  for (int i = 199; i > 0; --i)
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(rng.below(static_cast<std::uint64_t>(i) + 1))]);
  std::vector<int> want(order.end() - 20, order.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(v, want);

  Dataset again = indexed(200), other = indexed(200);
  EXPECT_EQ(indices(split_validation(again, 0.1, 42)), v) << "the same seed, the same split";
  EXPECT_NE(indices(split_validation(other, 0.1, 7)), v) << "another seed, another split";
}

TEST(DataTransformValidation, EdgeCases) {
  Dataset train = indexed(10);
  EXPECT_EQ(split_validation(train, 0.0, 1).size(), 0);
  EXPECT_EQ(train.size(), 10) << "fraction 0 leaves the training set alone";
  EXPECT_EQ(split_validation(train, 0.25, 1).size(), 3) << "round(2.5) is 3";
  Dataset small = indexed(10);
  EXPECT_EQ(split_validation(small, 0.01, 1).size(), 1) << "at least one example when the fraction is above 0";
  Dataset two = indexed(2);
  EXPECT_THAT(error_of<std::invalid_argument>([&] { split_validation(two, 0.9, 1); }),
              HasSubstr("--val-fraction 0.9 holds out 2 of the 2 training examples and leaves none"));
  EXPECT_THAT(error_of<std::invalid_argument>([&] { split_validation(two, 1.0, 1); }),
              HasSubstr("--val-fraction: must be in [0, 1), not 1"));
  EXPECT_THROW(split_validation(two, -0.1, 1), std::invalid_argument);
  EXPECT_THROW(split_validation(two, std::nan(""), 1), std::invalid_argument);
}

// ---- through load_data: --limit, then the transform, then the split ----------------------

TEST(DataTransformLoad, SyntheticAsThreeByFortyByForty) {
  DataOptions o;
  o.dataset = "synthetic";
  o.limit = 100;
  const DataSplit plain = load_data(o);
  o.resize = ImageSize{40, 40};
  o.channels = 3;
  o.val_fraction = 0.1;
  const DataSplit s = load_data(o);
  for (const Dataset* d : {&s.train, &s.test, &s.val})
    EXPECT_EQ(d->shape, (Shape3{3, 40, 40})) << "the set of " << d->size() << " examples";
  EXPECT_EQ(s.train.size(), 90);
  EXPECT_EQ(s.val.size(), 10) << "the split comes after --limit: 10% of 100";
  EXPECT_EQ(s.test.size(), 2000);
  EXPECT_THAT(s.note, HasSubstr("training on the first 100 examples (--limit); resized 28x28 -> 40x40 (bilinear), "
                                "1 -> 3 channels; 10 of the 100 training examples held out for validation "
                                "(--val-fraction 0.1, --seed 42)"));
  // Each test example is its 28x28 picture resized, repeated over the three channels.
  for (int i : {0, 1999}) {
    const std::vector<float> picture(plain.test.image(i), plain.test.image(i) + 784);
    const std::vector<float> want = resized(picture, 28, 28, 40, 40);
    for (int c = 0; c < 3; ++c) EXPECT_TRUE(std::equal(want.begin(), want.end(), s.test.image(i) + c * 1600)) << i;
  }
  for (const Dataset* d : {&s.train, &s.val, &s.test})
    for (float v : d->images) ASSERT_TRUE(v >= 0.0f && v <= 1.0f);
}

TEST(DataTransformLoad, ErrorsNameTheFlag) {
  DataOptions o;
  o.dataset = "synthetic";
  o.limit = 1;
  o.val_fraction = 0.5;
  EXPECT_THAT(error_of<std::invalid_argument>([&] { load_data(o); }), HasSubstr("--val-fraction 0.5 holds out 1 of the 1"));
}

}  // namespace
}  // namespace course
