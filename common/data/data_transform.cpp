/// @file data_transform.cpp
/// @brief --resize (bilinear), --channels and the --val-fraction split.
#include "common/data/data_transform.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/core/rng.hpp"

namespace course {

namespace {

/// A whole string as a positive int of at most `max`; false for anything else.
bool read_side(const std::string& text, int max, int* value) {
  if (text.empty() || text.size() > 9) return false;
  for (char ch : text)
    if (ch < '0' || ch > '9') return false;
  const long v = std::strtol(text.c_str(), nullptr, 10);
  if (v < 1 || v > max) return false;
  *value = static_cast<int>(v);
  return true;
}

/// a + f (b - a), kept between a and b (rounding could step one ulp past them,
/// and a picture's values must stay in [0, 1]).
inline float lerp_between(float a, float b, float f) {
  const float v = a + f * (b - a);
  return a <= b ? std::min(std::max(v, a), b) : std::min(std::max(v, b), a);
}

/// Where output pixel i of n samples an input of m pixels: the two input
/// pixels and the weight of the second (align_corners false, pixel centres).
struct Tap {
  int lo, hi;
  float frac;
};

std::vector<Tap> taps(int m, int n) {
  std::vector<Tap> t(static_cast<std::size_t>(n));
  const double scale = static_cast<double>(m) / n;
  for (int i = 0; i < n; ++i) {
    double s = (i + 0.5) * scale - 0.5;
    if (s < 0) s = 0;  // the first half pixel repeats the edge
    int lo = static_cast<int>(s);
    if (lo > m - 1) lo = m - 1;
    const int hi = lo + 1 < m ? lo + 1 : m - 1;
    t[static_cast<std::size_t>(i)] = {lo, hi, static_cast<float>(s - lo)};
  }
  return t;
}

std::string gigabytes(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
  return buf;
}

/// The machine's memory in bytes (0 when unknown).
double physical_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}

}  // namespace

ImageSize parse_image_size(const std::string& text) {
  const std::string usage = "--resize: expected N or HxW (height x width), each from 1 to " +
                            std::to_string(kMaxResizeSide) + ", not '" + text + "'";
  ImageSize s;
  const auto x = text.find_first_of("xX");
  if (x == std::string::npos) {
    if (!read_side(text, kMaxResizeSide, &s.h)) throw std::invalid_argument(usage);
    s.w = s.h;
    return s;
  }
  if (!read_side(text.substr(0, x), kMaxResizeSide, &s.h) || !read_side(text.substr(x + 1), kMaxResizeSide, &s.w))
    throw std::invalid_argument(usage);
  return s;
}

void resize_bilinear(const float* src, int h, int w, float* dst, int oh, int ow) {
  if (h < 1 || w < 1 || oh < 1 || ow < 1)
    throw std::invalid_argument("resize_bilinear: sizes must be at least 1 (" + std::to_string(h) + "x" +
                                std::to_string(w) + " -> " + std::to_string(oh) + "x" + std::to_string(ow) + ")");
  const std::vector<Tap> xs = taps(w, ow), ys = taps(h, oh);
  for (int y = 0; y < oh; ++y) {
    const Tap& ty = ys[static_cast<std::size_t>(y)];
    const float* r0 = src + static_cast<long>(ty.lo) * w;
    const float* r1 = src + static_cast<long>(ty.hi) * w;
    float* out = dst + static_cast<long>(y) * ow;
    for (int x = 0; x < ow; ++x) {
      const Tap& tx = xs[static_cast<std::size_t>(x)];
      const float top = lerp_between(r0[tx.lo], r0[tx.hi], tx.frac);
      const float bottom = lerp_between(r1[tx.lo], r1[tx.hi], tx.frac);
      out[x] = lerp_between(top, bottom, ty.frac);
    }
  }
}

void resize_examples(Dataset& data, ImageSize size) {
  if (size.empty() || (data.shape.h == size.h && data.shape.w == size.w)) return;
  const Shape3 from = data.shape, to{from.c, size.h, size.w};
  const long planes = static_cast<long>(data.size()) * from.c;
  std::vector<float> out(static_cast<std::size_t>(planes * to.h * to.w));
  for (long p = 0; p < planes; ++p)
    resize_bilinear(data.images.data() + p * from.h * from.w, from.h, from.w, out.data() + p * to.h * to.w, to.h,
                    to.w);
  data.images = std::move(out);
  data.shape = to;
}

void convert_channels(Dataset& data, int channels) {
  const int c = data.shape.c;
  if (channels == c) return;
  if (channels < 1 || (c != 1 && channels != 1))
    throw std::invalid_argument("--channels " + std::to_string(channels) + ": cannot turn " + data.name +
                                "'s " + std::to_string(c) +
                                "-channel examples into that (1 -> C repeats the gray plane, C -> 1 averages)");
  const long plane = static_cast<long>(data.shape.h) * data.shape.w;
  const long n = data.size();
  std::vector<float> out(static_cast<std::size_t>(n * channels * plane));
  for (long i = 0; i < n; ++i) {
    const float* in = data.images.data() + i * c * plane;
    float* o = out.data() + i * channels * plane;
    if (c == 1) {
      for (int k = 0; k < channels; ++k) std::copy(in, in + plane, o + k * plane);
    } else {
      for (long j = 0; j < plane; ++j) {
        double sum = 0;
        for (int k = 0; k < c; ++k) sum += in[k * plane + j];
        o[j] = std::min(1.0f, static_cast<float>(sum / c));
      }
    }
  }
  data.images = std::move(out);
  data.shape.c = channels;
}

std::string transform_examples(Dataset& train, Dataset& test, ImageSize size, int channels) {
  const Shape3 from = train.shape;
  const Shape3 to{channels > 0 ? channels : from.c, size.empty() ? from.h : size.h, size.empty() ? from.w : size.w};
  if (to == from && test.shape == from) return "";
  const std::string flags = std::string(size.empty() ? "" : "--resize") + (!size.empty() && channels > 0 ? " and " : "") +
                            (channels > 0 ? "--channels" : "");
  if (train.name == "csv")
    throw std::invalid_argument(flags + ": the csv data set's examples are feature vectors (" + from.str() +
                                "), not pictures");
  if (to.c != from.c && to.c != 1 && from.c != 1)
    throw std::invalid_argument("--channels " + std::to_string(to.c) + ": cannot turn " + train.name + "'s " +
                                std::to_string(from.c) +
                                "-channel examples into that (1 -> C repeats the gray plane, C -> 1 averages)");
  // Refused before anything is allocated: a --resize that cannot fit would
  // otherwise end in a failed allocation, or in the kernel's OOM killer.
  const double bytes = static_cast<double>(train.size() + test.size()) * static_cast<double>(to.size()) * 4.0;
  const double memory = physical_memory();
  if (memory > 0 && bytes > memory)
    throw std::invalid_argument(flags + ": the " + std::to_string(train.size()) + " training and " +
                                std::to_string(test.size()) + " test examples would take " + gigabytes(bytes) +
                                " as " + to.str() + " floats, more than this machine's " + gigabytes(memory) +
                                " of memory (use --limit, or a smaller --resize)");

  for (Dataset* d : {&train, &test}) {
    // Shrinking channels first and growing them last keeps the resize on the fewest planes.
    if (to.c < d->shape.c) convert_channels(*d, to.c);
    resize_examples(*d, ImageSize{to.h, to.w});
    if (to.c > d->shape.c) convert_channels(*d, to.c);
  }
  std::string note;
  if (from.h != to.h || from.w != to.w)
    note = "resized " + std::to_string(from.h) + "x" + std::to_string(from.w) + " -> " + std::to_string(to.h) + "x" +
           std::to_string(to.w) + " (bilinear)";
  if (from.c != to.c)
    note += (note.empty() ? "" : ", ") + std::to_string(from.c) + " -> " + std::to_string(to.c) +
            (to.c == 1 ? " channel (averaged)" : " channels");
  return note;
}

Dataset split_validation(Dataset& train, double fraction, std::uint64_t seed) {
  if (!(fraction >= 0 && fraction < 1)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", fraction);
    throw std::invalid_argument(std::string("--val-fraction: must be in [0, 1), not ") + buf);
  }
  Dataset val = train.empty_like();
  const int n = train.size();
  if (fraction == 0 || n == 0) return val;
  long held = std::lround(fraction * n);
  if (held < 1) held = 1;
  if (held >= n) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", fraction);
    throw std::invalid_argument(std::string("--val-fraction ") + buf + " holds out " + std::to_string(held) +
                                " of the " + std::to_string(n) +
                                " training examples and leaves none to train on (lower it, or raise --limit)");
  }

  // The same Fisher-Yates shuffle as course::epoch_order, from its own stream.
  std::vector<int> order(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
  Rng rng(seed, kValidationSplitStream);
  for (int i = n - 1; i > 0; --i) {
    const auto j = static_cast<int>(rng.below(static_cast<std::uint64_t>(i) + 1));
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  std::vector<char> is_val(static_cast<std::size_t>(n), 0);
  for (long k = n - held; k < n; ++k) is_val[static_cast<std::size_t>(order[static_cast<std::size_t>(k)])] = 1;

  const long D = train.shape.size();
  std::vector<float> kept_images;
  std::vector<int> kept_labels;
  kept_images.reserve(static_cast<std::size_t>((n - held) * D));
  kept_labels.reserve(static_cast<std::size_t>(n - held));
  val.images.reserve(static_cast<std::size_t>(held * D));
  val.labels.reserve(static_cast<std::size_t>(held));
  for (int i = 0; i < n; ++i) {
    const float* x = train.image(i);
    const int y = train.labels[static_cast<std::size_t>(i)];
    if (is_val[static_cast<std::size_t>(i)]) {
      val.images.insert(val.images.end(), x, x + D);
      val.labels.push_back(y);
    } else {
      kept_images.insert(kept_images.end(), x, x + D);
      kept_labels.push_back(y);
    }
  }
  train.images = std::move(kept_images);
  train.labels = std::move(kept_labels);
  return val;
}

}  // namespace course
