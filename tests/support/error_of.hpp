// The message of an exception a test expects, for checking its words.
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace course::testkit {

/// Runs `f`, which must throw E; returns the message (a test failure, and "", when nothing is thrown).
template <class E, class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no exception was thrown";
  return "";
}

}  // namespace course::testkit
