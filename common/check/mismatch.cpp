#include "common/check/mismatch.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>

namespace course {

TensorShape::TensorShape(std::initializer_list<std::pair<const char*, int>> axes) {
  for (const auto& [name, size] : axes) {
    names.emplace_back(name ? name : "");
    sizes.push_back(size);
  }
}

std::size_t TensorShape::count() const {
  std::size_t n = 1;
  for (int s : sizes) n *= static_cast<std::size_t>(std::max(s, 0));
  return n;
}

std::string TensorShape::axis_name(std::size_t d) const {
  if (d < names.size() && !names[d].empty()) return names[d];
  return "axis " + std::to_string(d);
}

std::string TensorShape::str() const {
  std::string s = "[";
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    s += d ? ", " : "";
    if (d < names.size() && !names[d].empty()) s += names[d] + "=";
    s += std::to_string(sizes[d]);
  }
  return s + "]";
}

std::size_t TensorShape::stride(std::size_t d) const {
  std::size_t s = 1;
  for (std::size_t e = d + 1; e < sizes.size(); ++e) s *= static_cast<std::size_t>(std::max(sizes[e], 1));
  return s;
}

int TensorShape::coordinate(std::size_t flat, std::size_t d) const {
  return static_cast<int>((flat / stride(d)) % static_cast<std::size_t>(std::max(sizes[d], 1)));
}

std::string TensorShape::where(std::size_t flat) const {
  if (sizes.empty()) return "[" + std::to_string(flat) + "]";
  std::string s = "[";
  for (std::size_t d = 0; d < sizes.size(); ++d) s += (d ? ", " : "") + std::to_string(coordinate(flat, d));
  return s + "]";
}

std::string factor_string(double k) {
  char buf[64];
  const double r = std::round(k), inv = std::round(1 / k);
  if (std::fabs(k - r) < 1e-4 * std::max(1.0, std::fabs(r)) && r != 0)
    std::snprintf(buf, sizeof buf, "%.0f", r);
  else if (std::fabs(1 / k - inv) < 1e-4 * std::fabs(inv) && std::fabs(inv) >= 2)
    std::snprintf(buf, sizeof buf, "%s1/%.0f", inv < 0 ? "-" : "", std::fabs(inv));
  else
    std::snprintf(buf, sizeof buf, "%.4g", k);
  return buf;
}

namespace {

/// The entries under examination and a way to look up what any of them should hold.
struct Evidence {
  const TensorShape& shape;
  const std::vector<double>& actual;
  const std::vector<ExpectedEntry>& expected;
  const CloseEnough& close;
  const MismatchWords& words;
  std::unordered_map<std::size_t, double> expected_at;  // index -> expected value
  std::vector<bool> right;                              // per entry of `expected`
  std::size_t wrong_count = 0;

  Evidence(const TensorShape& s, const std::vector<double>& a, const std::vector<ExpectedEntry>& e,
           const CloseEnough& c, const MismatchWords& w)
      : shape(s), actual(a), expected(e), close(c), words(w) {
    expected_at.reserve(e.size());
    for (const auto& x : e) expected_at[x.index] = x.value;
    for (const auto& x : e) {
      right.push_back(close(a[x.index], x.value));
      wrong_count += !right.back();
    }
  }

  /// Does `predict` (the value the slip puts at an entry, or NaN where it cannot say) explain every entry,
  /// saying something at no fewer than 1/`share` of them (half, unless told) and at two wrong ones at least?
  template <typename Predict>
  bool explains_all(const Predict& predict, std::size_t share = 2) const {
    std::size_t said = 0, said_wrong = 0;
    for (std::size_t k = 0; k < expected.size(); ++k) {
      const double v = predict(expected[k]);
      if (std::isnan(v)) continue;
      if (!close(v, expected[k].value)) return false;
      ++said;
      said_wrong += !right[k];
    }
    return share * said >= expected.size() && said_wrong >= std::min<std::size_t>(2, wrong_count);
  }
};

/// The flat index of `flat`'s coordinates in the same tensor with axes p and q swapped.
std::size_t swapped_index(const TensorShape& s, std::size_t flat, std::size_t p, std::size_t q) {
  std::vector<int> c(s.rank()), sizes = s.sizes;
  for (std::size_t d = 0; d < s.rank(); ++d) c[d] = s.coordinate(flat, d);
  std::swap(c[p], c[q]);
  std::swap(sizes[p], sizes[q]);
  std::size_t j = 0;
  for (std::size_t d = 0; d < s.rank(); ++d) j = j * static_cast<std::size_t>(std::max(sizes[d], 1)) + c[d];
  return j;
}

std::string transposed(const Evidence& ev) {
  const TensorShape& s = ev.shape;
  for (std::size_t p = 0; p < s.rank(); ++p)
    for (std::size_t q = p + 1; q < s.rank(); ++q) {
      if (s.sizes[p] < 2 || s.sizes[q] < 2) continue;
      if (ev.explains_all([&](const ExpectedEntry& e) { return ev.actual[swapped_index(s, e.index, p, q)]; })) {
        const std::string a = s.axis_name(p), b = s.axis_name(q);
        TensorShape swapped = s;
        std::swap(swapped.sizes[p], swapped.sizes[q]);
        if (swapped.names.size() == s.rank()) std::swap(swapped.names[p], swapped.names[q]);
        std::string m = "the values are right but laid out with " + a + " and " + b + " swapped: the " + s.str() +
                        " tensor was written as " + swapped.str() + " (a transpose";
        if (s.rank() == 2)
          m += ": index " + b + " * " + std::to_string(s.sizes[0]) + " + " + a + " where " + a + " * " +
               std::to_string(s.sizes[1]) + " + " + b + " belongs";
        return m + ")";
      }
    }
  return "";
}

std::string flipped_sign(const Evidence& ev) {
  return ev.explains_all([&](const ExpectedEntry& e) { return -ev.actual[e.index]; })
             ? ev.words.actual + " = -" + ev.words.expected + " at every entry: the sign is flipped"
             : "";
}

std::string scaled(const Evidence& ev) {
  std::vector<double> ratios;
  for (const auto& e : ev.expected)
    if (std::fabs(e.value) > 1e-12 && std::isfinite(ev.actual[e.index])) ratios.push_back(ev.actual[e.index] / e.value);
  if (ratios.size() < 2) return "";
  std::nth_element(ratios.begin(), ratios.begin() + ratios.size() / 2, ratios.end());
  const double k = ratios[ratios.size() / 2];
  if (!(std::fabs(k) > 1e-9) || std::fabs(k - 1) < 1e-6 || std::fabs(k + 1) < 1e-6) return "";
  if (!ev.explains_all([&](const ExpectedEntry& e) { return ev.actual[e.index] / k; })) return "";
  const std::string f = factor_string(k);
  return ev.words.actual + " = " + f + " x " + ev.words.expected + " at every entry: a constant factor (" +
         (std::fabs(k) > 1 ? "a sum where a mean belongs, or a factor applied twice?" : "a mean taken twice, or a factor left out?") + ")";
}

std::string shifted_by_a_constant(const Evidence& ev) {
  const auto& first = ev.expected.front();
  const double d = ev.actual[first.index] - first.value;
  if (!std::isfinite(d) || d == 0) return "";
  if (!ev.explains_all([&](const ExpectedEntry& e) { return ev.actual[e.index] - d; })) return "";
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s = %s %c %.6g at every entry: a constant term added, or left out",
                ev.words.actual.c_str(), ev.words.expected.c_str(), d < 0 ? '-' : '+', std::fabs(d));
  return buf;
}

/// One axis a value is moved along, and by how many cells.
struct Move {
  std::size_t axis;
  int step;
};

/// Does every entry's value sit `moves` away from where it belongs (actual at c + step = expected at c, along
/// each moved axis), wherever c + step lies inside the tensor? An entry whose value would land outside says
/// nothing (it fell off the edge: padding, or a row read past its end), so only 1/`share` of the entries need
/// say something; but at least two must be entries a shift could not leave unchanged (their neighbour there
/// holds another value), or a run of equal values would look shifted.
bool shifted_by(const Evidence& ev, const std::vector<Move>& moves, std::size_t share) {
  const TensorShape& s = ev.shape;
  std::size_t informative = 0;
  const bool holds = ev.explains_all(
      [&](const ExpectedEntry& e) {
        long j = static_cast<long>(e.index);
        for (const Move& m : moves) {
          const int c = s.coordinate(e.index, m.axis) + m.step;
          if (c < 0 || c >= s.sizes[m.axis]) return static_cast<double>(NAN);
          j += m.step * static_cast<long>(s.stride(m.axis));
        }
        const auto there = ev.expected_at.find(static_cast<std::size_t>(j));
        if (there == ev.expected_at.end() || !ev.close(there->second, e.value)) ++informative;
        return ev.actual[static_cast<std::size_t>(j)];
      },
      share);
  return holds && informative >= 2;
}

/// "c + 1", "c - 2".
std::string moved(const char* c, int step) {
  return std::string(c) + (step > 0 ? " + " : " - ") + std::to_string(std::abs(step));
}

/// A shift by `size` cells (1 or 2) along one axis of at least `min_cells` cells, the innermost axis first
/// (the likeliest), shown by 1/`share` of the entries (shifted_by); `cause` is what usually does it. "" if none.
std::string shifted_along_one_axis(const Evidence& ev, int size, int min_cells, std::size_t share,
                                   const std::string& cause) {
  const TensorShape& s = ev.shape;
  for (std::size_t d = s.rank(); d-- > 0;) {
    if (s.sizes[d] < min_cells) continue;
    for (int step : {+size, -size})
      if (shifted_by(ev, {{d, step}}, share)) {
        const std::string a = s.axis_name(d);
        return "the values are right but shifted by " + std::string(size == 1 ? "one" : "two") + " along " + a +
               ": the value that belongs at " + a + " = c sits at " + a + " = " + moved("c", step) + " (" + cause +
               ")";
      }
  }
  return "";
}

std::string off_by_one(const Evidence& ev) { return shifted_along_one_axis(ev, 1, 3, 2, "an index off by one"); }

/// A shift by one or two cells along both innermost axes at once (an image's rows and columns: an input
/// index off by one in h and w, ih = oh*S - P + kh + 1), or by two along one axis (the padding of a 5x5
/// kernel counted twice, or left out). On a small plane most values fall off its edge (a 2x2 output moved by
/// (1, 1) keeps one of its four), so a quarter of the entries may carry the evidence.
std::string shifted_in_the_plane(const Evidence& ev) {
  const TensorShape& s = ev.shape;
  if (s.rank() >= 2) {
    const std::size_t h = s.rank() - 2, w = s.rank() - 1;
    for (int size : {1, 2})
      for (int dh : {-size, size})
        for (int dw : {-size, size}) {
          if (s.sizes[h] <= size || s.sizes[w] <= size || !shifted_by(ev, {{h, dh}, {w, dw}}, 4)) continue;
          const std::string a = s.axis_name(h), b = s.axis_name(w);
          return "the values are right but shifted along " + a + " and " + b + " at once: the value that belongs at (" +
                 a + ", " + b + ") = (r, c) sits at (" + moved("r", dh) + ", " + moved("c", dw) + ") (" +
                 (size == 1 ? "an index off by one in both, e.g. the input read at ih = oh*S - P + kh + 1, or the "
                              "padding off by one"
                            : "an offset of two in both: the padding counted twice, or left out?") +
                 ")";
        }
  }
  return shifted_along_one_axis(ev, 2, 4, 4, "an offset of two: the padding?");
}

/// The complement of the right support: actual is 0 exactly where expected is not, and non-zero exactly where
/// expected is 0. A mask inverted (a ReLU gradient passed where x < 0, where x > 0 belongs) does that, but for
/// the few cells both masks shut (x = 0 exactly); a gradient sent to the wrong cells does not (most cells are 0
/// in both), nor does one never written (0 everywhere), nor a mask right anywhere (non-zero in both).
std::string inverted_mask(const Evidence& ev) {
  std::size_t zero_where_not = 0, nonzero_where_zero = 0, zero_in_both = 0;
  for (const auto& e : ev.expected) {
    const bool actual_zero = ev.actual[e.index] == 0, expected_zero = e.value == 0;
    if (!actual_zero && !expected_zero) return "";
    if (actual_zero && expected_zero) ++zero_in_both;
    else ++(actual_zero ? zero_where_not : nonzero_where_zero);
  }
  if (zero_where_not < 2 || nonzero_where_zero < 2 || 10 * zero_in_both > ev.expected.size()) return "";
  const std::string& a = ev.words.actual;
  const std::string& e = ev.words.expected;
  return "the mask is inverted: " + a + " is 0 exactly where " + e + " is not, and non-zero exactly where " + e +
         " is 0 (the complement of the right support: a gradient passed where x < 0 instead of x > 0, or a test "
         "written the other way round?)";
}

std::string term_along_one_axis(const Evidence& ev) {
  const TensorShape& s = ev.shape;
  if (s.rank() < 2) return "";
  for (std::size_t d = 0; d < s.rank(); ++d) {
    std::unordered_map<int, std::vector<double>> diffs;  // coordinate along d -> actual - expected there
    for (const auto& e : ev.expected) diffs[s.coordinate(e.index, d)].push_back(ev.actual[e.index] - e.value);
    std::size_t grouped = 0, groups = 0;
    for (const auto& [c, v] : diffs)
      if (v.size() >= 2) grouped += v.size(), ++groups;
    if (groups < 2 || 2 * grouped < ev.expected.size()) continue;  // too few entries share a coordinate to tell
    std::unordered_map<int, double> term;
    for (const auto& [c, v] : diffs) term[c] = v.front();
    bool varies = false;
    for (const auto& [c, t] : term) varies = varies || std::fabs(t - term.begin()->second) > 1e-12;
    if (!varies) continue;  // one constant: shifted_by_a_constant's case
    if (ev.explains_all([&](const ExpectedEntry& e) { return ev.actual[e.index] - term[s.coordinate(e.index, d)]; })) {
      const std::string a = s.axis_name(d);
      return ev.words.actual + " - " + ev.words.expected + " depends on " + a + " alone: a term indexed by " + a +
             " is left out or added twice (a bias?)";
    }
  }
  return "";
}

/// actual - expected = f(one axis) + g(another), both varying: a term indexed by the wrong axis (a bias
/// b[n] added where b[o] belongs gives b[n] - b[o]). f and g are fitted as the means of the difference
/// along each axis, which is exact for such a sum over a whole tensor.
std::string term_along_two_axes(const Evidence& ev) {
  const TensorShape& s = ev.shape;
  if (s.rank() < 2) return "";
  for (std::size_t p = 0; p < s.rank(); ++p)
    for (std::size_t q = p + 1; q < s.rank(); ++q) {
      if (s.sizes[p] < 2 || s.sizes[q] < 2) continue;
      std::unordered_map<int, std::pair<double, int>> along_p, along_q;  // coordinate -> (sum of differences, count)
      double total = 0;
      for (const auto& e : ev.expected) {
        const double d = ev.actual[e.index] - e.value;
        if (!std::isfinite(d)) return "";
        auto& a = along_p[s.coordinate(e.index, p)];
        auto& b = along_q[s.coordinate(e.index, q)];
        a.first += d, ++a.second, b.first += d, ++b.second, total += d;
      }
      const double mean = total / static_cast<double>(ev.expected.size());
      auto term = [](const std::unordered_map<int, std::pair<double, int>>& m, int c) {
        const auto& [sum, count] = m.at(c);
        return sum / count;
      };
      auto varies = [&](const std::unordered_map<int, std::pair<double, int>>& m) {
        for (const auto& [c, v] : m)
          if (std::fabs(v.first / v.second - mean) > 1e-9 * (1 + std::fabs(mean))) return true;
        return false;
      };
      if (along_p.size() < 2 || along_q.size() < 2 || !varies(along_p) || !varies(along_q)) continue;
      if (ev.explains_all([&](const ExpectedEntry& e) {
            return ev.actual[e.index] - (term(along_p, s.coordinate(e.index, p)) +
                                         term(along_q, s.coordinate(e.index, q)) - mean);
          })) {
        const std::string a = s.axis_name(p), b = s.axis_name(q);
        return ev.words.actual + " - " + ev.words.expected + " = f(" + a + ") + g(" + b +
               "): a term indexed by " + a + " where one indexed by " + b + " belongs, or the other way round (a bias "
               "read with the wrong index?)";
      }
    }
  return "";
}

std::string never_written(const Evidence& ev) {
  if (ev.wrong_count < 2) return "";
  double v = NAN;
  bool first = true, same = true, expected_differ = false;
  double e0 = 0;
  for (std::size_t k = 0; k < ev.expected.size(); ++k) {
    if (ev.right[k]) continue;
    const double a = ev.actual[ev.expected[k].index];
    if (first) {
      v = a, e0 = ev.expected[k].value, first = false;
      continue;
    }
    same = same && (a == v || (std::isnan(a) && std::isnan(v)));
    expected_differ = expected_differ || ev.expected[k].value != e0;
  }
  if (!same || !expected_differ) return "";
  char buf[200];
  if (std::isnan(v))
    return "every wrong entry is NaN: never written (a buffer that starts as NaN), or a 0/0 or Inf - Inf";
  std::snprintf(buf, sizeof buf, "every wrong entry holds %.6g: never written (still what the buffer held)%s", v,
                v == 0 ? ", or zeroed after it was" : ", or one value written everywhere");
  return buf;
}

std::string same_error_where_wrong(const Evidence& ev) {
  if (ev.wrong_count < 2) return "";
  double d = NAN;
  for (std::size_t k = 0; k < ev.expected.size(); ++k) {
    if (ev.right[k]) continue;
    const double diff = ev.actual[ev.expected[k].index] - ev.expected[k].value;
    if (std::isnan(d)) d = diff;
    if (!std::isfinite(diff) || std::fabs(diff - d) > 1e-6 * std::max(std::fabs(d), 1e-12)) return "";
  }
  // 1/B said as such: a label's -1/B left out of a softmax gradient is the likeliest such term.
  const double whole = std::round(1 / std::fabs(d));
  const std::string as_fraction =
      whole >= 2 && std::fabs(1 / std::fabs(d) - whole) < 1e-4 * whole ? " (= " + factor_string(d) + ")" : "";
  char buf[240];
  std::snprintf(buf, sizeof buf, "%s - %s = %.6g%s at each wrong entry: one constant term left out or added there",
                ev.words.actual.c_str(), ev.words.expected.c_str(), d, as_fraction.c_str());
  return buf;
}

std::string nonfinite(const Evidence& ev) {
  std::size_t n = 0;
  for (std::size_t k = 0; k < ev.expected.size(); ++k)
    n += !ev.right[k] && !std::isfinite(ev.actual[ev.expected[k].index]);
  if (n == 0) return "";
  return std::to_string(n) + " of the wrong entries are NaN or Inf";
}

/// Where the wrong entries are: past a bound along an axis, or only at the edges.
std::string region(const Evidence& ev) {
  const TensorShape& s = ev.shape;
  // One wrong entry lies at some edge of nearly any shape: where it lies says nothing more than its index.
  if (ev.wrong_count < 2 || ev.wrong_count == ev.expected.size()) return "";
  for (std::size_t d = 0; d < s.rank(); ++d) {
    if (s.sizes[d] < 2) continue;
    int wmin = s.sizes[d], wmax = -1, rmin = s.sizes[d], rmax = -1;
    for (std::size_t k = 0; k < ev.expected.size(); ++k) {
      const int c = s.coordinate(ev.expected[k].index, d);
      if (ev.right[k]) rmin = std::min(rmin, c), rmax = std::max(rmax, c);
      else wmin = std::min(wmin, c), wmax = std::max(wmax, c);
    }
    const std::string a = s.axis_name(d);
    if (rmax < wmin)
      return "right for " + a + " < " + std::to_string(wmin) + ", wrong from " + a + " = " + std::to_string(wmin) +
             " on (" + a + " has " + std::to_string(s.sizes[d]) + "): a loop bound or a size?";
    if (wmax < rmin)
      return "wrong for " + a + " < " + std::to_string(rmin) + " only, right from there on: a start or an offset?";
  }
  for (std::size_t d = 0; d < s.rank(); ++d) {  // edges: padding, or a bound at one end
    if (s.sizes[d] < 3) continue;
    bool only_edges = true, right_inside = false;
    for (std::size_t k = 0; k < ev.expected.size(); ++k) {
      const int c = s.coordinate(ev.expected[k].index, d);
      const bool edge = c == 0 || c == s.sizes[d] - 1;
      if (ev.right[k]) right_inside = right_inside || !edge;
      else only_edges = only_edges && edge;
    }
    if (only_edges && right_inside)
      return "wrong only at the first or last " + s.axis_name(d) + ": the edges (padding? a bound at one end?)";
  }
  if (s.rank() >= 2) {  // the border of the two innermost axes: an image's padding
    const std::size_t h = s.rank() - 2, w = s.rank() - 1;
    if (s.sizes[h] >= 3 && s.sizes[w] >= 3) {
      bool only_border = true, right_inside = false;
      for (std::size_t k = 0; k < ev.expected.size(); ++k) {
        const int ch = s.coordinate(ev.expected[k].index, h), cw = s.coordinate(ev.expected[k].index, w);
        const bool border = ch == 0 || cw == 0 || ch == s.sizes[h] - 1 || cw == s.sizes[w] - 1;
        if (ev.right[k]) right_inside = right_inside || !border;
        else only_border = only_border && border;
      }
      if (only_border && right_inside)
        return "wrong only on the border of the " + s.axis_name(h) + " x " + s.axis_name(w) +
               " plane, right inside it: the padding";
    }
  }
  return "";
}

}  // namespace

std::string diagnose_mismatch(const TensorShape& shape, const std::vector<double>& actual,
                              const std::vector<ExpectedEntry>& expected, const CloseEnough& close,
                              const MismatchWords& words, ValueKind kind) {
  if (expected.empty() || actual.size() != shape.count()) return "";
  const Evidence ev(shape, actual, expected, close, words);
  if (ev.wrong_count == 0) return "";
  using Hypothesis = std::string (*)(const Evidence&);
  const std::vector<Hypothesis> hypotheses =
      kind == ValueKind::Labels
          ? std::vector<Hypothesis>{never_written, transposed, off_by_one, shifted_in_the_plane}  // no arithmetic on labels
          : std::vector<Hypothesis>{never_written, inverted_mask, transposed, flipped_sign, scaled, shifted_by_a_constant,
                                    off_by_one, shifted_in_the_plane,
                                    term_along_one_axis, term_along_two_axes, same_error_where_wrong};
  std::string what;
  if (expected.size() >= 3) {
    for (Hypothesis hypothesis : hypotheses) {
      what = hypothesis(ev);
      if (!what.empty()) break;
    }
  }
  if (what.empty()) what = nonfinite(ev);
  const std::string where = region(ev);
  if (what.empty()) return where;
  return where.empty() ? what : what + "; " + where;
}

}  // namespace course
