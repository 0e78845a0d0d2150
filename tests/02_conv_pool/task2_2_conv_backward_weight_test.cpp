// Task 2.2: the weight and bias gradients of conv2d, checked by central differences of the plain
// reference forward (reference.hpp), so these tests need Task 2.2 alone. The checks live in
// conv_checks.hpp, shared with the slips catalog.
#include <gtest/gtest.h>

#include "02_conv_pool/conv.hpp"
#include "conv_case_tests.hpp"
#include "conv_checks.hpp"

using namespace course;

namespace {
void lesson_conv_backward_weight(const double* x, const double* dy, double* dW, double* db, int B, const ConvGeometry& g) {
  conv2d_backward_weight(x, dy, dW, db, B, g);
}
void check_weight_gradients(int B, const ConvGeometry& g) { s02test::check_conv_weight_gradients(lesson_conv_backward_weight, {B, g}); }
}  // namespace

// One test per shape of conv_cases.hpp, named after it (conv_case_tests.hpp); nothing to skip on the CPU.
COURSE_CONV_CASE_TESTS(Task2_2_ConvBackwardWeight, K3Pad1NonSquareBatch, , check_weight_gradients)

// The gradients are sums over the batch, written fresh on every call: stale values must not leak in.
TEST(Task2_2_ConvBackwardWeight, SumsOverTheBatchAndOverwrites) {
  s02test::check_conv_weight_gradient_sums_the_batch(lesson_conv_backward_weight);
}
