#include "common/train/metrics.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace course {

namespace {

double ratio(long num, long den) { return den > 0 ? static_cast<double>(num) / static_cast<double>(den) : 0.0; }

std::string name_of(const std::vector<std::string>& names, int c) {
  if (c < static_cast<int>(names.size()) && !names[static_cast<std::size_t>(c)].empty())
    return names[static_cast<std::size_t>(c)];
  return std::to_string(c);
}

// Cuts a name to `width` characters, marking the cut with a trailing '.'.
std::string shorten(const std::string& s, std::size_t width) {
  if (s.size() <= width) return s;
  if (width <= 1) return s.substr(0, width);
  return s.substr(0, width - 1) + ".";
}

std::string pad_left(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

std::string pad_right(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

std::string fixed4(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

}  // namespace

ClassificationReport classification_report(const std::vector<int>& labels, const std::vector<int>& predictions,
                                           int classes) {
  if (classes < 1) throw std::invalid_argument("classification_report: classes must be at least 1, not " +
                                               std::to_string(classes));
  if (labels.size() != predictions.size())
    throw std::invalid_argument("classification_report: " + std::to_string(labels.size()) + " labels but " +
                                std::to_string(predictions.size()) + " predictions");
  ClassificationReport r;
  r.classes = classes;
  const auto k = static_cast<std::size_t>(classes);
  r.confusion.assign(k * k, 0);
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const int t = labels[i], p = predictions[i];
    if (t < 0 || t >= classes)
      throw std::invalid_argument("classification_report: label " + std::to_string(i) + " is " + std::to_string(t) +
                                  ", outside [0, " + std::to_string(classes) + ")");
    if (p < 0 || p >= classes)
      throw std::invalid_argument("classification_report: prediction " + std::to_string(i) + " is " +
                                  std::to_string(p) + ", outside [0, " + std::to_string(classes) + ")");
    ++r.confusion[static_cast<std::size_t>(t) * k + static_cast<std::size_t>(p)];
    if (t == p) ++r.correct;
  }
  r.total = static_cast<long>(labels.size());
  r.accuracy = ratio(r.correct, r.total);

  r.precision.assign(k, 0.0);
  r.recall.assign(k, 0.0);
  r.f1.assign(k, 0.0);
  r.support.assign(k, 0);
  for (int c = 0; c < classes; ++c) {
    long predicted = 0, actual = 0;  // column sum, row sum
    for (int o = 0; o < classes; ++o) {
      predicted += r.at(o, c);
      actual += r.at(c, o);
    }
    const long hits = r.at(c, c);
    const auto i = static_cast<std::size_t>(c);
    r.support[i] = actual;
    r.precision[i] = ratio(hits, predicted);
    r.recall[i] = ratio(hits, actual);
    const double sum = r.precision[i] + r.recall[i];
    r.f1[i] = sum > 0 ? 2.0 * r.precision[i] * r.recall[i] / sum : 0.0;
    r.macro_precision += r.precision[i] / classes;
    r.macro_recall += r.recall[i] / classes;
    r.macro_f1 += r.f1[i] / classes;
  }
  return r;
}

std::string format_per_class(const ClassificationReport& r, const std::vector<std::string>& class_names) {
  std::size_t name_width = std::string("macro avg").size();
  for (int c = 0; c < r.classes; ++c) name_width = std::max(name_width, name_of(class_names, c).size());
  const std::size_t support_width = std::max<std::size_t>(7, std::to_string(r.total).size());

  std::string out = pad_right("class", name_width) + "  " + pad_left("precision", 9) + "  " + pad_left("recall", 6) +
                    "  " + pad_left("F1", 6) + "  " + pad_left("support", support_width) + "\n";
  auto row = [&](const std::string& name, double p, double rc, double f, long support) {
    out += pad_right(name, name_width) + "  " + pad_left(fixed4(p), 9) + "  " + pad_left(fixed4(rc), 6) + "  " +
           pad_left(fixed4(f), 6) + "  " + pad_left(std::to_string(support), support_width) + "\n";
  };
  for (int c = 0; c < r.classes; ++c) {
    const auto i = static_cast<std::size_t>(c);
    row(name_of(class_names, c), r.precision[i], r.recall[i], r.f1[i], r.support[i]);
  }
  row("macro avg", r.macro_precision, r.macro_recall, r.macro_f1, r.total);
  return out;
}

std::string format_confusion(const ClassificationReport& r, const std::vector<std::string>& class_names) {
  long largest = 0;
  for (long v : r.confusion) largest = std::max(largest, v);
  // Columns are as wide as the largest count, and at least 5 so names stay readable.
  const std::size_t col = std::max<std::size_t>(5, std::to_string(largest).size());
  const std::string corner = "true \\ predicted";
  std::size_t row_width = corner.size();
  for (int c = 0; c < r.classes; ++c) row_width = std::max(row_width, name_of(class_names, c).size());

  std::string out = pad_right(corner, row_width);
  for (int p = 0; p < r.classes; ++p) out += " " + pad_left(shorten(name_of(class_names, p), col), col);
  out += "\n";
  for (int t = 0; t < r.classes; ++t) {
    out += pad_right(name_of(class_names, t), row_width);
    for (int p = 0; p < r.classes; ++p) out += " " + pad_left(std::to_string(r.at(t, p)), col);
    out += "\n";
  }
  return out;
}

nlohmann::json to_json(const ClassificationReport& r, const std::vector<std::string>& class_names) {
  nlohmann::json j;
  j["classes"] = r.classes;
  j["examples"] = r.total;
  j["correct"] = r.correct;
  j["accuracy"] = r.accuracy;
  j["macro_precision"] = r.macro_precision;
  j["macro_recall"] = r.macro_recall;
  j["macro_f1"] = r.macro_f1;
  nlohmann::json per_class = nlohmann::json::array();
  for (int c = 0; c < r.classes; ++c) {
    const auto i = static_cast<std::size_t>(c);
    per_class.push_back({{"class", c},
                         {"name", name_of(class_names, c)},
                         {"precision", r.precision[i]},
                         {"recall", r.recall[i]},
                         {"f1", r.f1[i]},
                         {"support", r.support[i]}});
  }
  j["per_class"] = per_class;
  nlohmann::json rows = nlohmann::json::array();
  for (int t = 0; t < r.classes; ++t) {
    nlohmann::json row = nlohmann::json::array();
    for (int p = 0; p < r.classes; ++p) row.push_back(r.at(t, p));
    rows.push_back(row);
  }
  j["confusion"] = rows;  // rows: true class, columns: predicted class
  return j;
}

}  // namespace course
