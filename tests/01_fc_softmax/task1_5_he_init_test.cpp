// Task 1.5: He initialisation. The checks live in init_checks.hpp, shared with the slips catalog.
#include <gtest/gtest.h>

#include "01_fc_softmax/init.hpp"
#include "init_checks.hpp"

using namespace course;

namespace {
const auto lesson_init = [](float* W, long w_count, float* b, long b_count, int fan_in, Rng& rng) {
  he_init(W, w_count, b, b_count, fan_in, rng);
};
}  // namespace

TEST(Task1_5_HeInit, StandardDeviationIsSqrtTwoOverFanIn) { s01test::check_he_standard_deviation(lesson_init); }

TEST(Task1_5_HeInit, SameSeedSameWeights) { s01test::check_he_same_seed_same_weights(lesson_init); }

// The draw order is fixed (Rng::fill_normal, entry by entry), so stages can
// rely on bit-identical weights.
TEST(Task1_5_HeInit, DrawsInTheSharedOrder) { s01test::check_he_draw_order(lesson_init); }
