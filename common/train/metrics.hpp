/// @file metrics.hpp
/// @brief Classification metrics: confusion matrix, per-class precision, recall and F1.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace course {

/// How well a classifier did on a labelled set, class by class.
///
/// Conventions (the same as scikit-learn's with `zero_division=0`):
/// - a class that is never predicted has precision 0 (0 of 0 predictions were
///   right: there is nothing to credit, and a classifier that ignores a class
///   should not look good on it);
/// - a class with no examples (support 0) has recall 0;
/// - F1 is 0 when precision + recall is 0;
/// - the macro averages are plain means over all classes, so every class
///   counts the same however rare it is.
struct ClassificationReport {
  int classes = 0;  ///< number of classes
  /// classes x classes counts, row-major: confusion[t * classes + p] is the
  /// number of examples of true class t predicted as class p.
  std::vector<long> confusion;
  double accuracy = 0.0;           ///< fraction right, in [0, 1] (0 for an empty set)
  std::vector<double> precision;   ///< per class: right predictions of c / all predictions of c
  std::vector<double> recall;      ///< per class: right predictions of c / examples of c
  std::vector<double> f1;          ///< per class: harmonic mean of precision and recall
  std::vector<long> support;       ///< per class: number of examples whose true class is c
  double macro_precision = 0.0;    ///< mean of precision over the classes
  double macro_recall = 0.0;       ///< mean of recall over the classes
  double macro_f1 = 0.0;           ///< mean of f1 over the classes
  long total = 0;                  ///< number of examples
  long correct = 0;                ///< number predicted right

  /// Count of examples of true class `t` predicted as `p`.
  long at(int t, int p) const { return confusion[static_cast<std::size_t>(t) * classes + p]; }
};

/// Builds the report from true labels and predictions (one each per example).
///
/// Throws std::invalid_argument when the sizes differ, `classes` < 1, or a
/// label or prediction is outside [0, classes) (naming the index and value).
ClassificationReport classification_report(const std::vector<int>& labels, const std::vector<int>& predictions,
                                           int classes);

/// An aligned table, one row per class and a macro-average row:
///
///     class         precision  recall      F1  support
///     T-shirt/top      0.8312  0.8540  0.8424     1000
///     ...
///     macro avg        0.8702  0.8690  0.8688    10000
///
/// `class_names` may be shorter than the number of classes (or empty): the
/// missing names are the class numbers.
std::string format_per_class(const ClassificationReport& report, const std::vector<std::string>& class_names);

/// The confusion matrix as an aligned table: rows are the true classes (full
/// names), columns the predicted classes (names shortened to the column width,
/// a trailing '.' marking a cut). Each row sums to that class's support.
std::string format_confusion(const ClassificationReport& report, const std::vector<std::string>& class_names);

/// The report as JSON: accuracy, macro averages, per-class rows (name,
/// precision, recall, f1, support) and the confusion matrix as rows.
nlohmann::json to_json(const ClassificationReport& report, const std::vector<std::string>& class_names);

}  // namespace course
