// The slips list (tests/slips.def), run: each listed slip is planted in a learner's wrong copy of
// the task's code (written in the stage's slips_test.cpp), the task's own checks run on it (the
// functions its task tests call), and the failure message they print must hold the words that
// name the slip. A slip the checks let pass, or whose message lacks its words, fails the test.
//
//   const std::map<std::string, std::function<void()>> plants = {{"dense_W_transposed", [] { ... }}, ...};
//   testkit::expect_every_slip_named("01", plants);   // prints "stage 01: named N of M slips"
//
// COURSE_SLIP_MESSAGES=1 in the environment prints every slip's message too (to choose a row's words).
#pragma once

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace course::testkit {

/// One row of tests/slips.def.
struct SlipRow {
  std::string stage, task, id, name, planted;
  std::vector<std::string> words;  ///< each must appear in the message
};

/// The rows of `stage` ("01"), in the order of the list.
inline std::vector<SlipRow> slips_of_stage(const std::string& stage) {
  const std::vector<SlipRow> all = {
#define SLIP(stage, task, id, name, planted, ...) {stage, task, id, name, planted, {__VA_ARGS__}},
#include "../slips.def"
#undef SLIP
  };
  std::vector<SlipRow> rows;
  for (const SlipRow& row : all)
    if (row.stage == stage) rows.push_back(row);
  return rows;
}

/// `message` without the lines where GoogleTest echoes an assertion's source ("Value of: <expression>"):
/// the expression of a check holds every slip it knows by name, the message only the one it found.
inline std::string without_echoed_source(const std::string& message) {
  std::string kept;
  std::size_t at = 0;
  while (at < message.size()) {
    std::size_t end = message.find('\n', at);
    end = end == std::string::npos ? message.size() : end + 1;
    if (message.compare(at, 10, "Value of: ") != 0) kept.append(message, at, end - at);
    at = end;
  }
  return kept;
}

/// What the checks `run` report when they fail, every failure's message joined (as a learner reads
/// them, without the file and line and the echoed source); `failures` counts them. An exception is a
/// failure too.
inline std::string failures_of(const std::function<void()>& run, int* failures) {
  ::testing::TestPartResultArray results;
  {
    const ::testing::ScopedFakeTestPartResultReporter spy(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ALL_THREADS, &results);
    try {
      run();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "threw: " << e.what();
    }
  }
  std::string text;
  *failures = 0;
  for (int i = 0; i < results.size(); ++i) {
    if (!results.GetTestPartResult(i).failed()) continue;
    ++*failures;
    text += without_echoed_source(results.GetTestPartResult(i).message());
    text += "\n";
  }
  return text;
}

/// Plants every slip of `stage`'s rows with `plants` (by id) and checks that its message names it:
/// the checks fail, and the message holds each of the row's words. Two slips of one task must not
/// each hold the other's words (those would not tell them apart). Every row needs a plant and every
/// plant a row.
inline void expect_every_slip_named(const std::string& stage,
                                    const std::map<std::string, std::function<void()>>& plants) {
  const std::vector<SlipRow> rows = slips_of_stage(stage);
  std::map<std::string, std::string> messages;  // id -> message
  std::size_t named = 0;
  for (const SlipRow& row : rows) {
    const auto plant = plants.find(row.id);
    if (plant == plants.end()) {
      ADD_FAILURE() << "slip " << row.id << " (Task " << row.task << ", " << row.name << ") of tests/slips.def has no "
                    << "plant in the stage's slips_test.cpp";
      continue;
    }
    int failures = 0;
    const std::string message = failures_of(plant->second, &failures);
    messages[row.id] = message;
    std::string missing;
    for (const std::string& w : row.words)
      if (message.find(w) == std::string::npos) missing += (missing.empty() ? "\"" : ", \"") + w + "\"";
    const bool ok = failures > 0 && missing.empty();
    if (std::getenv("COURSE_SLIP_MESSAGES")) std::printf("---- %s\n%s\n", row.id.c_str(), message.c_str());
    named += ok;
    std::printf("[ slip     ] %-8s Task %-4s %-30s %s\n", ok ? "named" : "NOT", row.task.c_str(), row.id.c_str(),
                row.name.c_str());
    if (failures == 0)
      ADD_FAILURE() << "slip " << row.id << " (Task " << row.task << ", " << row.name << "; planted: " << row.planted
                    << "): the task's checks pass on it";
    else if (!missing.empty())
      ADD_FAILURE() << "slip " << row.id << " (Task " << row.task << ", " << row.name << "; planted: " << row.planted
                    << "): the message lacks " << missing << ". The message:\n"
                    << message;
  }
  for (const auto& [id, plant] : plants) {
    bool listed = false;
    for (const SlipRow& row : rows) listed = listed || row.id == id;
    if (!listed) ADD_FAILURE() << "the plant " << id << " has no row in tests/slips.def for stage " << stage;
  }
  // Two slips of one task whose messages each hold the other's words cannot be told apart. (One
  // message may hold another slip's words where its slip includes the other: a ReLU mask left out
  // also passes the gradient at 0.)
  const auto holds_words = [&](const SlipRow& row, const std::string& id) {
    bool all = !row.words.empty() && messages.count(id);
    for (const std::string& w : row.words) all = all && messages[id].find(w) != std::string::npos;
    return all;
  };
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::size_t j = i + 1; j < rows.size(); ++j)
      if (rows[i].task == rows[j].task && holds_words(rows[i], rows[j].id) && holds_words(rows[j], rows[i].id))
        ADD_FAILURE() << "slips " << rows[i].id << " and " << rows[j].id << " of Task " << rows[i].task
                      << " give messages that hold each other's words: the words do not tell the two apart";
  std::printf("[ slips    ] stage %s: named %zu of %zu slips\n", stage.c_str(), named, rows.size());
}

}  // namespace course::testkit
