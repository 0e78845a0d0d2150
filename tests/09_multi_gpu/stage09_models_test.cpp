// The figures of lesson 09 that come from the models alone: parameters, gradient
// bytes and the buckets at 128 KiB (no GPU needed).
#include <gtest/gtest.h>

#include "09_multi_gpu/bucket_plan.hpp"
#include "09_multi_gpu/scaling_models.hpp"
#include "common/model/arch.hpp"
#include "common/train/trainer.hpp"

using namespace course;

namespace {

long parameters(const std::string& spec) { return count_parameters(parse_arch(spec), {1, 28, 28}, 10); }

}  // namespace

TEST(Stage09_Models, TheLessonsParameterCounts) {
  EXPECT_EQ(parameters(named_model_spec("mlp")), 235146);
  EXPECT_EQ(parameters(named_model_spec("cnn")), 162710);
  EXPECT_EQ(parameters(named_model_spec("cnn-deep")), 58000);
  EXPECT_EQ(parameters(wide_model_spec()), 370954);
  EXPECT_EQ(parse_arch(wide_model_spec()).spec(), wide_model_spec()) << "the trainer's JSON names it so";
}
