// Task 4.1: one thread per output in a single block, and its limit.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "gemm_check.hpp"

using namespace course;
using namespace course::gputest;

// Runs without a GPU: the launcher must refuse before it touches the device
// (the pointers here are host memory that is never dereferenced).
TEST(Task4_1_SingleBlock, RefusesMoreThan1024Outputs) {
  std::vector<float> a(1), b(1), c(1);
  const int too_big[][3] = {{33, 33, 1}, {1, 1025, 1}, {1025, 1, 7}, {64, 64, 64}};
  for (const auto& s : too_big) {
    try {
      gemm(kGemmSingleBlock, false, false, s[0], s[1], s[2], 1.f, a.data(), b.data(), 0.f, c.data());
      ADD_FAILURE() << "kernel 1 accepted C of " << s[0] << " x " << s[1] << " = " << s[0] * s[1]
                    << " outputs, more than the 1024 threads one block may hold";
    } catch (const std::invalid_argument& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("1024"), std::string::npos) << "the message should say why: " << message;
      EXPECT_NE(message.find(std::to_string(s[0] * s[1])), std::string::npos)
          << "the message should name the number of outputs: " << message;
    }
  }
}

S04_MATCHES_CUBLAS_TEST(Task4_1_SingleBlock, MatchesCublasUpTo1024Outputs, kGemmSingleBlock, single_block_shapes())
