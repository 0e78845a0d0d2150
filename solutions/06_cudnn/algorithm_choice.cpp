/// @file algorithm_choice.cpp
/// @brief Stage 06: recording the conv algorithms a run chose, reading the record back, and checking it can be used here.
#include "06_cudnn/algorithm_choice.hpp"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/gpu/cudnn_check.hpp"

namespace course {

namespace {

using nlohmann::json;

constexpr int kRecordFormat = 1;

[[noreturn]] void bad(const std::string& problem) {
  throw std::invalid_argument("the record of conv algorithms " + problem);
}

const json& field(const json& object, const char* key, const std::string& where) {
  const auto it = object.find(key);
  if (it == object.end()) bad(where + " lacks '" + key + "'");
  return *it;
}

std::string text(const json& object, const char* key, const std::string& where) {
  const json& v = field(object, key, where);
  if (!v.is_string()) bad(where + ": '" + key + "' is not text");
  return v.get<std::string>();
}

long long whole(const json& object, const char* key, const std::string& where, long long lo, long long hi) {
  const json& v = field(object, key, where);
  if (!v.is_number_integer()) bad(where + ": '" + key + "' is not a whole number");
  // A number beyond long long reads as unsigned: refused before any conversion.
  if (v.is_number_unsigned() && v.get<unsigned long long>() > static_cast<unsigned long long>(hi))
    bad(where + ": '" + key + "' is out of range");
  const long long n = v.get<long long>();
  if (n < lo || n > hi) bad(where + ": '" + key + "' is " + std::to_string(n) + ", outside [" + std::to_string(lo) +
                            ", " + std::to_string(hi) + "]");
  return n;
}

/// The value of enum E whose name (algorithm_name or math_type_name) is `name`, among the `count` first.
template <typename E, typename Name>
E by_name(const std::string& name, int count, Name name_of, const std::string& what) {
  for (int i = 0; i < count; ++i)
    if (name_of(static_cast<E>(i)) == name) return static_cast<E>(i);
  bad("names " + what + " '" + name + "', which this cuDNN (" + std::to_string(cudnnGetVersion()) + ") does not have");
}

/// Three numbers of `key` (forward, backward data, backward filter), each in [0, hi].
std::vector<double> three(const json& entry, const char* key, const std::string& where, double hi) {
  const json& v = field(entry, key, where);
  if (!v.is_array() || v.size() != 3) bad(where + ": '" + key + "' is not a list of three numbers");
  std::vector<double> out;
  for (const json& x : v) {
    if (!x.is_number()) bad(where + ": '" + key + "' is not a list of three numbers");
    const double d = x.get<double>();
    if (!(d >= 0 && d <= hi)) bad(where + ": '" + key + "' holds " + x.dump() + ", outside [0, " + json(hi).dump() + "]");
    out.push_back(d);
  }
  return out;
}

RecordedAlgorithms entry_of(const json& e, std::size_t i) {
  const std::string where = "entry " + std::to_string(i + 1);
  if (!e.is_object()) bad(where + " is not a JSON object");
  RecordedAlgorithms r;
  r.layer = text(e, "layer", where);
  r.batch = static_cast<int>(whole(e, "batch", where, 1, 1 << 30));
  r.shape = text(e, "shape", where);
  ConvAlgorithms& a = r.algos;
  const std::string of = " of " + r.layer;
  a.math = by_name<cudnnMathType_t>(text(e, "math", where), 4, math_type_name, "the math type" + of);
  a.forward = by_name<cudnnConvolutionFwdAlgo_t>(
      text(e, "forward", where), CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
      [](cudnnConvolutionFwdAlgo_t x) { return algorithm_name(x); }, "the forward algorithm" + of);
  a.backward_data = by_name<cudnnConvolutionBwdDataAlgo_t>(
      text(e, "backward_data", where), CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
      [](cudnnConvolutionBwdDataAlgo_t x) { return algorithm_name(x); }, "the backward-data algorithm" + of);
  a.backward_filter = by_name<cudnnConvolutionBwdFilterAlgo_t>(
      text(e, "backward_filter", where), CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
      [](cudnnConvolutionBwdFilterAlgo_t x) { return algorithm_name(x); }, "the backward-filter algorithm" + of);
  const std::vector<double> bytes = three(e, "bytes", where, 1e15), ms = three(e, "ms", where, 1e9);
  a.forward_bytes = static_cast<std::size_t>(bytes[0]);
  a.backward_data_bytes = static_cast<std::size_t>(bytes[1]);
  a.backward_filter_bytes = static_cast<std::size_t>(bytes[2]);
  a.forward_ms = static_cast<float>(ms[0]);
  a.backward_data_ms = static_cast<float>(ms[1]);
  a.backward_filter_ms = static_cast<float>(ms[2]);
  return r;
}

/// "" when cuDNN answers the workspace `algo` needs (raising `bytes` to it), else why it cannot run it.
template <typename Algo, typename Query>
std::string needs(const char* direction, Algo algo, std::size_t& bytes, Query query) {
  std::size_t here = 0;
  const cudnnStatus_t s = query(algo, &here);
  if (s != CUDNN_STATUS_SUCCESS)
    return std::string(direction) + " " + algorithm_name(algo) + ": " + cudnnGetErrorString(s);
  bytes = std::max(bytes, here);
  return "";
}

}  // namespace

std::string conv_shape_key(const ConvGeometry& g, int B) {
  return std::to_string(B) + "|" + std::to_string(g.C_in) + "x" + std::to_string(g.H) + "x" + std::to_string(g.W) +
         "|" + std::to_string(g.C_out) + "k" + std::to_string(g.K) + "p" + std::to_string(g.P) + "s" +
         std::to_string(g.S);
}

std::string encode_algorithm_record(const AlgorithmRecord& record) {
  json layers = json::array();
  for (const RecordedAlgorithms& r : record.layers) {
    const ConvAlgorithms& a = r.algos;
    layers.push_back({{"layer", r.layer},
                      {"batch", r.batch},
                      {"shape", r.shape},
                      {"math", math_type_name(a.math)},
                      {"forward", algorithm_name(a.forward)},
                      {"backward_data", algorithm_name(a.backward_data)},
                      {"backward_filter", algorithm_name(a.backward_filter)},
                      {"bytes", {a.forward_bytes, a.backward_data_bytes, a.backward_filter_bytes}},
                      {"ms", {a.forward_ms, a.backward_data_ms, a.backward_filter_ms}}});
  }
  return json{{"format", kRecordFormat},
              {"rule", record.rule},
              {"gpu", record.gpu},
              {"cudnn", record.cudnn},
              {"layers", std::move(layers)}}
      .dump();
}

AlgorithmRecord decode_algorithm_record(const std::string& text_in) {
  json j;
  try {
    j = json::parse(text_in);
  } catch (const json::exception&) {
    bad("is not JSON");
  }
  if (!j.is_object()) bad("is not a JSON object");
  const long long format = whole(j, "format", "the record", 0, 1 << 30);
  if (format != kRecordFormat)
    bad("has format " + std::to_string(format) + "; this build reads format " + std::to_string(kRecordFormat));
  AlgorithmRecord record;
  record.rule = text(j, "rule", "the record");
  record.gpu = text(j, "gpu", "the record");
  record.cudnn = static_cast<int>(whole(j, "cudnn", "the record", 0, 1 << 30));
  const json layers = field(j, "layers", "the record");  // a copy: GCC 13 warns of a reference through the temporary string
  if (!layers.is_array()) bad("has no list of layers");
  std::set<std::pair<std::string, int>> seen;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    RecordedAlgorithms r = entry_of(layers[i], i);
    if (!seen.emplace(r.layer, r.batch).second)
      bad("holds " + r.layer + " at batch " + std::to_string(r.batch) + " twice");
    record.layers.push_back(std::move(r));
  }
  return record;
}

std::vector<RecordedAlgorithms> recorded_algorithms(const EngineState& state, AlgoRule rule) {
  const auto it = state.find(kAlgorithmRecordName);
  if (it == state.end()) return {};
  AlgorithmRecord record;
  try {
    record = decode_algorithm_record(it->second);
  } catch (const std::invalid_argument& e) {
    std::cerr << "warning: stage 06: " << e.what() << "; the conv algorithms are measured again, so this run may "
              << "round differently from the run that recorded them\n";
    return {};
  }
  if (record.rule != algo_rule_name(rule)) {
    std::cerr << "warning: stage 06: the recorded conv algorithms were chosen with --conv-algos " << record.rule
              << ", this run asks for " << algo_rule_name(rule) << ": they are measured again, so this run "
              << "rounds differently from the run that recorded them\n";
    return {};
  }
  const int cudnn_here = static_cast<int>(cudnnGetVersion());
  if (record.gpu != gpu_name() || record.cudnn != cudnn_here)
    std::cerr << "note: stage 06: the recorded conv algorithms were chosen on " << record.gpu << " with cuDNN "
              << record.cudnn << "; this run is on " << gpu_name() << " with cuDNN " << cudnn_here
              << ": it takes them where cuDNN can run them here, and may still round differently\n";
  return record.layers;
}

ConvAlgorithms measured_conv_algorithms(const GpuHandles& h, const ConvDescriptors& d, const ConvGeometry& g, int B,
                                        AlgoRule rule) {
  static std::map<std::string, ConvAlgorithms> measured;  // by shape and rule, for the whole process
  const std::string key = conv_shape_key(g, B) + " " + algo_rule_name(rule);
  const auto hit = measured.find(key);
  if (hit == measured.end()) return measured.emplace(key, choose_conv_algorithms(h, d, rule)).first->second;
  // The measured algorithms ran with the math type of their result: set it here too.
  CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv, hit->second.math));
  return hit->second;
}

std::optional<ConvAlgorithms> take_recorded(const std::vector<RecordedAlgorithms>& recorded, const std::string& layer,
                                            const ConvGeometry& g, int B, const GpuHandles& h,
                                            const ConvDescriptors& d) {
  const auto r = std::find_if(recorded.begin(), recorded.end(),
                              [&](const RecordedAlgorithms& e) { return e.layer == layer && e.batch == B; });
  if (r == recorded.end()) return std::nullopt;
  ConvAlgorithms a = r->algos;
  const std::string shape = conv_shape_key(g, B);
  const std::string why = r->shape != shape ? "they were measured for the shape " + r->shape + ", this layer is " + shape
                                            : take_recorded_algorithms(h, d, a);
  if (why.empty()) return a;
  std::cerr << "warning: stage 06: the recorded conv algorithms of " << layer << " at batch " << B
            << " cannot be used here (" << why << "); they are measured again, so this run may round differently "
            << "from the run that recorded them\n";
  return std::nullopt;
}

EngineState algorithm_state(const std::vector<RecordedAlgorithms>& chosen,
                            const std::vector<RecordedAlgorithms>& recorded, AlgoRule rule) {
  AlgorithmRecord record{algo_rule_name(rule), gpu_name(), static_cast<int>(cudnnGetVersion()), chosen};
  for (const RecordedAlgorithms& r : recorded)
    if (std::none_of(chosen.begin(), chosen.end(),
                     [&](const RecordedAlgorithms& c) { return c.layer == r.layer && c.batch == r.batch; }))
      record.layers.push_back(r);
  if (record.layers.empty()) return {};
  return {{kAlgorithmRecordName, encode_algorithm_record(record)}};
}

std::string take_recorded_algorithms(const GpuHandles& h, const ConvDescriptors& d, ConvAlgorithms& a) {
  cudnnMathType_t before{};
  CUDNN_CHECK(cudnnGetConvolutionMathType(d.conv, &before));
  // The workspace an algorithm needs (and whether it runs at all) depends on the math type.
  if (cudnnSetConvolutionMathType(d.conv, a.math) != CUDNN_STATUS_SUCCESS)
    return "math type " + math_type_name(a.math) + " is refused";
  ConvAlgorithms taken = a;
  std::string why = needs("forward", taken.forward, taken.forward_bytes, [&](auto algo, std::size_t* b) {
    return cudnnGetConvolutionForwardWorkspaceSize(h.cudnn, d.x, d.w, d.conv, d.y, algo, b);
  });
  if (why.empty())
    why = needs("backward-data", taken.backward_data, taken.backward_data_bytes, [&](auto algo, std::size_t* b) {
      return cudnnGetConvolutionBackwardDataWorkspaceSize(h.cudnn, d.w, d.y, d.conv, d.x, algo, b);
    });
  if (why.empty())
    why = needs("backward-filter", taken.backward_filter, taken.backward_filter_bytes, [&](auto algo, std::size_t* b) {
      return cudnnGetConvolutionBackwardFilterWorkspaceSize(h.cudnn, d.x, d.y, d.conv, d.w, algo, b);
    });
  if (!why.empty()) {
    CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv, before));
    return why;
  }
  a = taken;
  return "";
}

}  // namespace course
