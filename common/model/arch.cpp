#include "common/model/arch.hpp"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace course {

std::string Shape3::str() const {
  return std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(w);
}

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::ReLU: return "relu";
    case Activation::LeakyReLU: return "leaky";
    case Activation::Sigmoid: return "sigmoid";
    case Activation::Tanh: return "tanh";
    case Activation::Softplus: return "softplus";
  }
  return "?";
}

std::string slope_text(double slope) {
  // The shortest "%.*f" that reads back as the same double: every double has a
  // finite decimal expansion, so the loop ends (a double in (0, 1) needs at most
  // 1074 digits); the last digit of the shortest one is never 0.
  char buf[1200];
  for (int digits = 1; digits < 1100; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*f", digits, slope);
    if (std::strtod(buf, nullptr) == slope) break;
  }
  return buf;
}

std::string LayerSpec::token() const {
  switch (kind) {
    case LayerKind::Dense: return "fc" + std::to_string(units);
    case LayerKind::Conv: {
      std::string s = "conv" + std::to_string(units) + "k" + std::to_string(kernel);
      if (pad) s += "p" + std::to_string(pad);
      if (stride != 1) s += "s" + std::to_string(stride);
      return s;
    }
    case LayerKind::MaxPool:
    case LayerKind::AvgPool: {
      std::string s = (kind == LayerKind::AvgPool ? "avgpool" : "pool") + std::to_string(kernel);
      if (stride != kernel) s += "s" + std::to_string(stride);
      if (pad) s += "p" + std::to_string(pad);
      return s;
    }
    case LayerKind::Flatten: return "flatten";
    case LayerKind::Activation:
      if (act == Activation::LeakyReLU && slope != kDefaultLeakySlope) return "leaky" + slope_text(slope);
      return activation_name(act);
  }
  return "?";
}

std::string Arch::spec() const {
  std::string s;
  for (std::size_t i = 0; i < layers.size(); ++i) s += (i ? "," : "") + layers[i].token();
  return s;
}

bool Arch::has_conv() const {
  for (const auto& l : layers)
    if (l.kind == LayerKind::Conv || is_pool(l.kind)) return true;
  return false;
}

namespace {

// Reads "<letter><number>" pairs after a prefix: "k3p1s2" -> {k:3, p:1, s:2}.
// Returns false on anything else. Numbers are limited to 1..100000.
bool read_fields(const std::string& s, std::size_t pos, const std::string& allowed,
                 int* values /* indexed like allowed */, bool* seen) {
  while (pos < s.size()) {
    const char key = s[pos++];
    const auto slot = allowed.find(key);
    if (slot == std::string::npos || seen[slot]) return false;
    if (pos >= s.size() || !std::isdigit(static_cast<unsigned char>(s[pos]))) return false;
    long v = 0;
    while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
      v = v * 10 + (s[pos++] - '0');
      if (v > 100000) return false;
    }
    values[slot] = static_cast<int>(v);
    seen[slot] = true;
  }
  return true;
}

bool read_count(const std::string& s, std::size_t pos, std::size_t* end, int* out) {
  long v = 0;
  std::size_t p = pos;
  while (p < s.size() && std::isdigit(static_cast<unsigned char>(s[p]))) {
    v = v * 10 + (s[p++] - '0');
    if (v > 100000) return false;
  }
  if (p == pos || v < 1) return false;
  *end = p;
  *out = static_cast<int>(v);
  return true;
}

LayerSpec parse_token(const std::string& tok, int index) {
  auto fail = [&](const std::string& expected) -> LayerSpec {
    throw std::invalid_argument("architecture spec, layer " + std::to_string(index) + " '" + tok +
                                "': expected " + expected);
  };
  LayerSpec l;
  auto starts = [&](const char* p) { return tok.rfind(p, 0) == 0; };
  static const struct { const char* name; Activation act; } acts[] = {
      {"relu", Activation::ReLU}, {"leaky", Activation::LeakyReLU},
      {"sigmoid", Activation::Sigmoid}, {"tanh", Activation::Tanh},
      {"softplus", Activation::Softplus}};
  for (const auto& a : acts) {
    if (tok == a.name) {
      l.kind = LayerKind::Activation;
      l.act = a.act;
      return l;
    }
  }
  if (starts("leaky")) {
    // leaky<A>: decimal digits with at most one point, 0 < A < 1 (leaky0.1, leaky.25).
    const std::string number = tok.substr(5);
    const bool plain = number.find_first_not_of("0123456789.") == std::string::npos &&
                       number.find('.') == number.rfind('.') && number.find_first_of("0123456789") != std::string::npos;
    const double a = plain ? std::strtod(number.c_str(), nullptr) : 0.0;
    if (!plain || !(a > 0.0 && a < 1.0)) return fail("leaky or leaky<A> with a slope 0 < A < 1, e.g. leaky0.1");
    l.kind = LayerKind::Activation;
    l.act = Activation::LeakyReLU;
    l.slope = a;
    return l;
  }
  if (tok == "flatten") {
    l.kind = LayerKind::Flatten;
    return l;
  }
  std::size_t end = 0;
  if (starts("fc")) {
    l.kind = LayerKind::Dense;
    if (!read_count(tok, 2, &end, &l.units) || end != tok.size()) return fail("fc<N> with N >= 1");
    return l;
  }
  if (starts("conv")) {
    l.kind = LayerKind::Conv;
    int v[3] = {0, 0, 1};  // k, p, s
    bool seen[3] = {false, false, false};
    if (!read_count(tok, 4, &end, &l.units) || !read_fields(tok, end, "kps", v, seen) || !seen[0] ||
        v[0] < 1 || v[2] < 1)
      return fail("conv<F>k<K>[p<P>][s<S>], e.g. conv16k3p1");
    l.kernel = v[0];
    l.pad = v[1];
    l.stride = v[2];
    return l;
  }
  // Max-pool (pool<K>...) and average-pool (avgpool<K>...) share their fields and the padding rule.
  const bool avg = starts("avgpool");
  if (avg || starts("pool")) {
    const std::string form = avg ? "avgpool<K>[s<S>][p<P>], e.g. avgpool2 or avgpool3s1p1"
                                 : "pool<K>[s<S>][p<P>], e.g. pool2 or pool3s2";
    const std::size_t start = avg ? 7 : 4;
    l.kind = avg ? LayerKind::AvgPool : LayerKind::MaxPool;
    if (!read_count(tok, start, &end, &l.kernel)) return fail(form);
    int v[2] = {l.kernel, 0};  // s, p
    bool seen[2] = {false, false};
    if (!read_fields(tok, end, "sp", v, seen) || v[0] < 1) return fail(form);
    l.stride = v[0];
    l.pad = v[1];
    // P >= K would make the first window (rows -P .. K-1-P) all padding: arch.hpp says why that is refused.
    if (l.pad >= l.kernel)
      return fail("pool padding smaller than the window (P < K: with P = " + std::to_string(l.pad) + " >= K = " +
                  std::to_string(l.kernel) + " the edge windows would hold only padding)");
    return l;
  }
  return fail("one of fc<N>, conv<F>k<K>..., pool<K>..., avgpool<K>..., flatten, relu, leaky[<A>], sigmoid, tanh, softplus");
}

}  // namespace

Arch parse_arch(const std::string& spec) {
  Arch arch;
  std::string tok;
  int index = 0;
  auto flush = [&]() {
    ++index;
    if (tok.empty()) throw std::invalid_argument("architecture spec, layer " + std::to_string(index) + " is empty");
    arch.layers.push_back(parse_token(tok, index));
    tok.clear();
  };
  for (char ch : spec) {
    if (ch == ',') {
      flush();
    } else if (!std::isspace(static_cast<unsigned char>(ch))) {
      tok += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
  }
  flush();
  return arch;
}

const std::vector<std::string>& output_activation_names() {
  static const std::vector<std::string> names = {"none", "sigmoid"};
  return names;
}

std::optional<Activation> output_activation(const Arch& arch) {
  const std::size_t L = arch.layers.size();
  if (L >= 2 && arch.layers[L - 1].kind == LayerKind::Activation && arch.layers[L - 2].kind == LayerKind::Dense)
    return arch.layers[L - 1].act;
  return std::nullopt;
}

Arch with_output_activation(Arch arch, const std::string& output) {
  if (output == "none") return arch;
  if (output != "sigmoid")
    throw std::invalid_argument("--output '" + output + "' is not an output activation (none, sigmoid)");
  if (!arch.layers.empty() && arch.layers.back().kind == LayerKind::Activation)
    throw std::invalid_argument("--output " + output + ": the spec '" + arch.spec() + "' ends with " +
                                arch.layers.back().token() + " already (write fc<classes> last, or leave --output out)");
  LayerSpec sigmoid;
  sigmoid.kind = LayerKind::Activation;
  sigmoid.act = Activation::Sigmoid;
  arch.layers.push_back(sigmoid);
  return arch;
}

void check_output_activation(const Arch& arch, const std::string& loss) {
  const std::optional<Activation> out = output_activation(arch);
  if (!out || loss == "mse") return;
  throw std::invalid_argument("the output activation " + std::string(activation_name(*out)) + " (--output " +
                              activation_name(*out) + ") needs --loss mse, not --loss " + loss +
                              ": softmax cross-entropy takes the last dense layer's logits themselves "
                              "(its softmax is its own output activation)");
}

Arch with_leaky_slope(Arch arch, double slope) {
  if (!(slope > 0.0 && slope < 1.0))
    throw std::invalid_argument("--leaky-slope must be in (0, 1), not " + slope_text(slope));
  if (slope == kDefaultLeakySlope) return arch;
  for (LayerSpec& l : arch.layers) {
    if (l.kind != LayerKind::Activation || l.act != Activation::LeakyReLU) continue;
    if (l.slope != kDefaultLeakySlope && l.slope != slope)
      throw std::invalid_argument("--leaky-slope " + slope_text(slope) + " and the spec's " + l.token() +
                                  " name two slopes: give one of them");
    l.slope = slope;
  }
  return arch;
}

bool has_leaky_relu(const Arch& arch, bool other_slope) {
  for (const LayerSpec& l : arch.layers)
    if (l.kind == LayerKind::Activation && l.act == Activation::LeakyReLU &&
        (!other_slope || l.slope != kDefaultLeakySlope))
      return true;
  return false;
}

namespace {

// The thesis's conv block: conv 3x3 pad 1, ReLU, max-pool 2 (docs/replication.md).
std::string conv_block(int filters) { return "conv" + std::to_string(filters) + "k3p1,relu,pool2,"; }

struct NamedModel {
  const char* name;
  std::string spec;
  std::optional<Shape3> input;            // nullopt: the data set's shape
  std::optional<TrainingRecipe> recipe;   // nullopt: the trainer's flags
};

// FLOPs and parameters of each: the table in arch.hpp.
const std::vector<NamedModel>& model_table() {
  static const std::string cnn = conv_block(16) + conv_block(32) + "flatten,fc100,relu,fc10";
  static const std::string deep = conv_block(16) + conv_block(32) + conv_block(32) + "flatten,fc128,relu,fc50,relu,fc10";
  static const std::vector<NamedModel> table = {
      {"mlp", "fc256,relu,fc128,relu,fc10", std::nullopt, std::nullopt},
      {"cnn", cnn, std::nullopt, std::nullopt},
      {"cnn-deep", deep, std::nullopt, std::nullopt},
      // The thesis's M0, M1, M2: its inputs and its recipes.
      {"m0", cnn, Shape3{3, 32, 32}, TrainingRecipe{32, 1000, 0.001}},
      {"m1", cnn, Shape3{3, 40, 40}, TrainingRecipe{32, 1000, 0.001}},
      {"m2", deep, Shape3{3, 40, 40}, TrainingRecipe{32, 2000, 0.00001}},
      // The course's two larger models for Fig 5.4, with M2's recipe: m2 twice as wide,
      // then two convs a block (the second without a pool) and wider again.
      {"m3", conv_block(32) + conv_block(64) + conv_block(64) + "flatten,fc128,relu,fc50,relu,fc10",
       Shape3{3, 40, 40}, TrainingRecipe{32, 2000, 0.00001}},
      {"m4",
       "conv32k3p1,relu," + conv_block(32) + "conv64k3p1,relu," + conv_block(64) + "conv128k3p1,relu," +
           conv_block(128) + "flatten,fc256,relu,fc50,relu,fc10",
       Shape3{3, 40, 40}, TrainingRecipe{32, 2000, 0.00001}},
  };
  return table;
}

const NamedModel& find_model(const std::string& name) {
  for (const auto& m : model_table())
    if (name == m.name) return m;
  std::string known;
  for (const auto& m : model_table()) known += (known.empty() ? "" : ", ") + std::string(m.name);
  throw std::invalid_argument("unknown model '" + name + "' (known: " + known + ")");
}

}  // namespace

std::vector<std::string> named_models() {
  std::vector<std::string> names;
  for (const auto& m : model_table()) names.push_back(m.name);
  return names;
}

std::string named_model_spec(const std::string& name) { return find_model(name).spec; }

std::optional<Shape3> named_model_input(const std::string& name) { return find_model(name).input; }

std::optional<TrainingRecipe> named_model_recipe(const std::string& name) { return find_model(name).recipe; }

std::string spec_from_layer_sizes(const std::string& sizes, const std::string& activation,
                                  long input_size, int classes) {
  std::vector<std::string> parts;
  std::stringstream ss(sizes);
  std::string p;
  while (std::getline(ss, p, ',')) parts.push_back(p);
  if (parts.size() < 2)
    throw std::invalid_argument("--layers '" + sizes + "': give at least the input and output sizes, e.g. 784,256,128,10");
  std::string spec;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    std::string size_text = parts[i], act = activation;
    const auto colon = size_text.find(':');
    if (colon != std::string::npos) {
      act = size_text.substr(colon + 1);
      size_text = size_text.substr(0, colon);
    }
    std::size_t end = 0;
    int n = 0;
    if (!read_count(size_text, 0, &end, &n) || end != size_text.size())
      throw std::invalid_argument("--layers '" + sizes + "': '" + parts[i] + "' is not a positive size");
    if (i == 0) {
      if (n != input_size)
        throw std::invalid_argument("--layers '" + sizes + "': the first size is the input, " +
                                    std::to_string(input_size) + " for this data set, not " + std::to_string(n));
      continue;
    }
    if (i + 1 == parts.size()) {
      if (n != classes)
        throw std::invalid_argument("--layers '" + sizes + "': the last size is the number of classes, " +
                                    std::to_string(classes) + ", not " + std::to_string(n));
      spec += "fc" + std::to_string(n);
      break;
    }
    // The activation as the spec spells it (parse_arch takes TANH or leaky.25;
    // the spec says tanh and leaky0.25), so that the result is canonical.
    std::string canonical;
    try {
      const Arch one = parse_arch(act);
      if (one.layers.size() == 1 && one.layers[0].kind == LayerKind::Activation) canonical = one.spec();
    } catch (const std::invalid_argument&) {
    }
    if (canonical.empty())
      throw std::invalid_argument("--layers '" + sizes + "': '" + act +
                                  "' is not an activation (relu, leaky, leaky<A>, sigmoid, tanh, softplus)");
    spec += "fc" + std::to_string(n) + "," + canonical + ",";
  }
  return spec;
}

namespace {

// At most this many values in one example's activations or in one layer's
// weights: every stage indexes them with int, and 2^31 - 1 floats are 8 GiB.
constexpr long kMaxValues = std::numeric_limits<int>::max();

// a * b * c * d when it is at most kMaxValues (each factor at least 1), else -1:
// checked one factor at a time, so nothing overflows on the way.
long bounded_product(long a, long b, long c = 1, long d = 1) {
  long p = 1;
  for (long f : {a, b, c, d}) {
    if (f < 1 || f > kMaxValues / p) return -1;
    p *= f;
  }
  return p;
}

}  // namespace

std::vector<Shape3> layer_shapes(const Arch& arch, Shape3 in, int classes) {
  std::vector<Shape3> out;
  if (arch.layers.empty()) throw std::invalid_argument("architecture spec is empty");
  if (bounded_product(in.c, in.h, in.w) < 0)
    throw std::invalid_argument("input shape " + in.str() + " is empty or has more than " +
                                std::to_string(kMaxValues) + " values");
  Shape3 s = in;
  bool flat = false;  // after a dense or flatten layer there is no image left
  int index = 0;
  for (const auto& l : arch.layers) {
    ++index;
    auto fail = [&](const std::string& why) {
      return std::invalid_argument("architecture spec, layer " + std::to_string(index) + " '" + l.token() +
                                   "' on input " + s.str() + ": " + why);
    };
    const std::string too_large = "more than " + std::to_string(kMaxValues) + " (2^31 - 1) ";
    switch (l.kind) {
      case LayerKind::Dense:
        if (bounded_product(s.size(), l.units) < 0) throw fail(too_large + "weights");
        s = Shape3{l.units, 1, 1};
        flat = true;
        break;
      case LayerKind::Flatten: s = Shape3{static_cast<int>(s.size()), 1, 1}; flat = true; break;
      case LayerKind::Activation: break;
      case LayerKind::Conv:
      case LayerKind::MaxPool:
      case LayerKind::AvgPool: {
        if (flat) throw fail("needs an image, but an earlier layer flattened it");
        // In long: a padded side of a tall image could pass the range of int.
        const long hp = s.h + 2L * l.pad, wp = s.w + 2L * l.pad;
        if (l.kernel > hp || l.kernel > wp) throw fail("the window is larger than the padded input");
        const long ho = (hp - l.kernel) / l.stride + 1, wo = (wp - l.kernel) / l.stride + 1;
        const long c = l.kind == LayerKind::Conv ? l.units : s.c;
        if (bounded_product(c, ho, wo) < 0) throw fail("its output has " + too_large + "values per example");
        if (l.kind == LayerKind::Conv && bounded_product(l.units, s.c, l.kernel, l.kernel) < 0)
          throw fail(too_large + "weights");
        s = Shape3{static_cast<int>(c), static_cast<int>(ho), static_cast<int>(wo)};
        break;
      }
    }
    out.push_back(s);
  }
  // The logits' layer: the last one, or the one before the output activation (fc3,sigmoid).
  const bool has_output = arch.layers.back().kind == LayerKind::Activation && arch.layers.size() >= 2;
  const auto& last = arch.layers[arch.layers.size() - (has_output ? 2 : 1)];
  if (last.kind != LayerKind::Dense || last.units != classes)
    throw std::invalid_argument("architecture spec '" + arch.spec() + "' must end with fc" +
                                std::to_string(classes) + " (one output per class of this data set), or fc" +
                                std::to_string(classes) + ",sigmoid (--output sigmoid)");
  if (has_output && arch.layers.back().act != Activation::Sigmoid)
    throw std::invalid_argument("architecture spec '" + arch.spec() + "' ends with " + arch.layers.back().token() +
                                " after fc" + std::to_string(classes) +
                                ": the one output activation is sigmoid (--output sigmoid, with --loss mse)");
  return out;
}

}  // namespace course
