// EXPECT_CONTAINS(text, part): a check on the words of a message or an output,
// which fails showing both when `text` does not hold `part`.
#pragma once

#include <gtest/gtest.h>

#include <string>

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "'" << (text) << "' lacks '" << (part) << "'"
