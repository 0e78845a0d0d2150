// Task 7.6: kernel 11 (TF32 tensor cores) against the exact product of its operands rounded
// to TF32 (every element) and of the unrounded ones (in norm: the precision's own error),
// at every shape class and layout (fast_gemm_check.hpp states both bounds).
#include <gtest/gtest.h>

#include "fast_gemm_check.hpp"

using namespace course;
using namespace course::s07test;

// Misaligned rows take the four-byte copies.
COURSE_GEMM_KERNEL_TESTS(Task7_6_Tf32Mma, kGemmTf32, SKIP_WITHOUT_FEATURE(Tf32Mma, "kernel 11"))
