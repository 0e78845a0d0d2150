// Tests of common/train/metrics: the confusion matrix and the per-class figures,
// against a small example worked by hand.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "common/train/metrics.hpp"

namespace course {
namespace {

// Ten examples in three classes; class 2 is never predicted.
//
//   labels       0 0 0 0 1 1 1 2 2 2
//   predictions  0 0 1 0 1 1 0 1 1 0
//
//   confusion (row = true, column = predicted)   precision     recall        F1
//        0  1  2                                 c0: 3/5=0.6   c0: 3/4=0.75  2*.6*.75/1.35   = 2/3
//   0 [  3  1  0 ]  support 4                    c1: 2/5=0.4   c1: 2/3       2*.4*(2/3)/(16/15) = 1/2
//   1 [  1  2  0 ]  support 3                    c2: 0/0 -> 0  c2: 0/3=0     0
//   2 [  1  2  0 ]  support 3
//   accuracy 5/10; macro precision 1/3, macro recall (0.75+2/3)/3 = 17/36, macro F1 (2/3+1/2)/3 = 7/18
const std::vector<int> kLabels = {0, 0, 0, 0, 1, 1, 1, 2, 2, 2};
const std::vector<int> kPredictions = {0, 0, 1, 0, 1, 1, 0, 1, 1, 0};

TEST(Metrics, HandWorkedThreeClassExample) {
  const ClassificationReport r = classification_report(kLabels, kPredictions, 3);
  EXPECT_EQ(r.classes, 3);
  EXPECT_EQ(r.confusion, (std::vector<long>{3, 1, 0, 1, 2, 0, 1, 2, 0}));
  EXPECT_EQ(r.at(2, 1), 2);
  EXPECT_EQ(r.total, 10);
  EXPECT_EQ(r.correct, 5);
  EXPECT_DOUBLE_EQ(r.accuracy, 0.5);
  EXPECT_EQ(r.support, (std::vector<long>{4, 3, 3}));
  EXPECT_DOUBLE_EQ(r.precision[0], 0.6);
  EXPECT_DOUBLE_EQ(r.precision[1], 0.4);
  EXPECT_DOUBLE_EQ(r.recall[0], 0.75);
  EXPECT_DOUBLE_EQ(r.recall[1], 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(r.recall[2], 0.0);
  EXPECT_NEAR(r.f1[0], 2.0 / 3.0, 1e-12);
  EXPECT_NEAR(r.f1[1], 0.5, 1e-12);
  EXPECT_NEAR(r.macro_precision, 1.0 / 3.0, 1e-12);
  EXPECT_NEAR(r.macro_recall, 17.0 / 36.0, 1e-12);
  EXPECT_NEAR(r.macro_f1, 7.0 / 18.0, 1e-12);
}

TEST(Metrics, ClassNeverPredictedHasPrecisionZero) {
  const ClassificationReport r = classification_report(kLabels, kPredictions, 3);
  EXPECT_EQ(r.precision[2], 0.0);
  EXPECT_EQ(r.f1[2], 0.0);
}

TEST(Metrics, ClassWithoutExamplesHasRecallZero) {
  // Class 1 has no examples but is predicted once: precision 0, recall 0 by convention.
  const ClassificationReport r = classification_report({0, 0, 2}, {0, 1, 2}, 3);
  EXPECT_EQ(r.support[1], 0);
  EXPECT_EQ(r.recall[1], 0.0);
  EXPECT_EQ(r.precision[1], 0.0);
  EXPECT_DOUBLE_EQ(r.precision[0], 1.0);
  EXPECT_DOUBLE_EQ(r.recall[0], 0.5);
  EXPECT_NEAR(r.f1[0], 2.0 / 3.0, 1e-12);
}

TEST(Metrics, PerfectPredictions) {
  const std::vector<int> y = {0, 1, 2, 3, 3, 2};
  const ClassificationReport r = classification_report(y, y, 4);
  EXPECT_DOUBLE_EQ(r.accuracy, 1.0);
  EXPECT_DOUBLE_EQ(r.macro_f1, 1.0);
  for (int c = 0; c < 4; ++c)
    for (int p = 0; p < 4; ++p) EXPECT_EQ(r.at(c, p), c == p ? r.support[static_cast<std::size_t>(c)] : 0);
}

TEST(Metrics, EmptySetGivesZeros) {
  const ClassificationReport r = classification_report({}, {}, 2);
  EXPECT_EQ(r.total, 0);
  EXPECT_EQ(r.accuracy, 0.0);
  EXPECT_EQ(r.macro_f1, 0.0);
}

TEST(Metrics, RejectsBadInput) {
  EXPECT_THROW(classification_report({0, 1}, {0}, 2), std::invalid_argument);
  EXPECT_THROW(classification_report({0, 2}, {0, 1}, 2), std::invalid_argument);   // label out of range
  EXPECT_THROW(classification_report({0, 1}, {0, -1}, 2), std::invalid_argument);  // prediction out of range
  EXPECT_THROW(classification_report({}, {}, 0), std::invalid_argument);
  try {
    classification_report({0, 1, 7}, {0, 1, 1}, 3);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("label 2 is 7"), std::string::npos) << e.what();
  }
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(MetricsFormat, PerClassTableIsAligned) {
  const ClassificationReport r = classification_report(kLabels, kPredictions, 3);
  const std::string table = format_per_class(r, {"cat", "dog", "hippopotamus"});
  const auto lines = lines_of(table);
  ASSERT_EQ(lines.size(), 5u) << table;  // header, 3 classes, macro avg
  for (const auto& l : lines) EXPECT_EQ(l.size(), lines[0].size()) << table;
  EXPECT_EQ(lines[0].find("class"), 0u);
  EXPECT_NE(lines[0].find("precision"), std::string::npos);
  EXPECT_NE(lines[0].find("recall"), std::string::npos);
  EXPECT_NE(lines[0].find("F1"), std::string::npos);
  EXPECT_NE(lines[0].find("support"), std::string::npos);
  EXPECT_EQ(lines[1].rfind("cat ", 0), 0u);
  EXPECT_NE(lines[1].find("0.6000"), std::string::npos);
  EXPECT_NE(lines[1].find("0.7500"), std::string::npos);
  EXPECT_NE(lines[1].find("0.6667"), std::string::npos);
  EXPECT_EQ(lines[3].rfind("hippopotamus", 0), 0u);
  EXPECT_NE(lines[3].find("0.0000"), std::string::npos);
  EXPECT_EQ(lines[4].rfind("macro avg", 0), 0u);
  EXPECT_NE(lines[4].find("0.3889"), std::string::npos);
  EXPECT_NE(lines[4].find("10"), std::string::npos);
}

TEST(MetricsFormat, MissingNamesBecomeNumbers) {
  const ClassificationReport r = classification_report(kLabels, kPredictions, 3);
  const auto lines = lines_of(format_per_class(r, {}));
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[1].rfind("0 ", 0), 0u);
  EXPECT_EQ(lines[3].rfind("2 ", 0), 0u);
}

TEST(MetricsFormat, ConfusionMatrixHasHeadersAndCounts) {
  const ClassificationReport r = classification_report(kLabels, kPredictions, 3);
  const std::string m = format_confusion(r, {"T-shirt/top", "Trouser", "Ankle boot"});
  const auto lines = lines_of(m);
  ASSERT_EQ(lines.size(), 4u) << m;
  for (const auto& l : lines) EXPECT_EQ(l.size(), lines[0].size()) << m;
  // Column headers are cut to the column width (5), marked with '.'.
  EXPECT_NE(lines[0].find("T-sh."), std::string::npos) << m;
  EXPECT_NE(lines[0].find("Trou."), std::string::npos) << m;
  EXPECT_NE(lines[0].find("Ankl."), std::string::npos) << m;
  // Row headers keep the full names.
  EXPECT_EQ(lines[1].rfind("T-shirt/top", 0), 0u);
  EXPECT_EQ(lines[3].rfind("Ankle boot", 0), 0u);
  // The counts of row 0: 3 1 0.
  std::istringstream row(lines[1].substr(lines[0].find(" T-sh.")));
  long a = -1, b = -1, c = -1;
  row >> a >> b >> c;
  EXPECT_EQ(a, 3);
  EXPECT_EQ(b, 1);
  EXPECT_EQ(c, 0);
}

TEST(MetricsFormat, WideCountsWidenTheColumns) {
  std::vector<int> y(123456, 1);
  const ClassificationReport r = classification_report(y, y, 2);
  const auto lines = lines_of(format_confusion(r, {"a", "b"}));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[2].find("123456"), std::string::npos);
  for (const auto& l : lines) EXPECT_EQ(l.size(), lines[0].size());
}

TEST(MetricsJson, HoldsEveryFigure) {
  const ClassificationReport r = classification_report(kLabels, kPredictions, 3);
  const nlohmann::json j = to_json(r, {"a", "b", "c"});
  EXPECT_EQ(j["classes"], 3);
  EXPECT_DOUBLE_EQ(j["accuracy"].get<double>(), 0.5);
  EXPECT_NEAR(j["macro_f1"].get<double>(), 7.0 / 18.0, 1e-12);
  ASSERT_EQ(j["per_class"].size(), 3u);
  EXPECT_EQ(j["per_class"][2]["name"], "c");
  EXPECT_EQ(j["per_class"][2]["precision"], 0.0);
  EXPECT_EQ(j["per_class"][0]["support"], 4);
  EXPECT_EQ(j["confusion"][2], (nlohmann::json{1, 2, 0}));
}

}  // namespace
}  // namespace course
