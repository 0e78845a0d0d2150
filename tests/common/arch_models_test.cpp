// The thesis's named models (m0 .. m4): their specs, inputs, recipes, FLOPs and
// parameter counts, as common/model/arch.hpp tabulates them.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/model/arch.hpp"

using namespace course;
using ::testing::HasSubstr;

namespace {

struct Cost {
  long long flops = 0;  // 2 per multiply-add of the conv and dense layers, forward, one image
  long long params = 0;
};

Cost cost_of(const std::string& spec, Shape3 input, int classes = 10) {
  const Arch arch = parse_arch(spec);
  const std::vector<Shape3> out = layer_shapes(arch, input, classes);
  Cost c;
  Shape3 in = input;
  for (std::size_t i = 0; i < arch.layers.size(); ++i) {
    const LayerSpec& l = arch.layers[i];
    if (l.kind == LayerKind::Conv) {
      const long long taps = static_cast<long long>(in.c) * l.kernel * l.kernel;
      c.flops += 2 * out[i].size() * taps;
      c.params += l.units * taps + l.units;
    }
    if (l.kind == LayerKind::Dense) {
      c.flops += 2 * in.size() * l.units;
      c.params += in.size() * l.units + l.units;
    }
    in = out[i];
  }
  return c;
}

}  // namespace

TEST(ArchModels, TheThesisModelsAndTheirInputs) {
  const std::vector<std::string> names = named_models();
  for (const char* m : {"mlp", "cnn", "cnn-deep", "m0", "m1", "m2", "m3", "m4"})
    EXPECT_NE(std::find(names.begin(), names.end(), m), names.end()) << m;
  // M0 and M1 are `cnn`, M2 is `cnn-deep`: only the input differs.
  EXPECT_EQ(named_model_spec("m0"), named_model_spec("cnn"));
  EXPECT_EQ(named_model_spec("m1"), named_model_spec("cnn"));
  EXPECT_EQ(named_model_spec("m2"), named_model_spec("cnn-deep"));
  EXPECT_EQ(named_model_input("m0"), (Shape3{3, 32, 32}));
  for (const char* m : {"m1", "m2", "m3", "m4"}) EXPECT_EQ(named_model_input(m), (Shape3{3, 40, 40})) << m;
  for (const char* m : {"mlp", "cnn", "cnn-deep"}) {
    EXPECT_FALSE(named_model_input(m).has_value()) << m << " takes the data set's shape";
    EXPECT_FALSE(named_model_recipe(m).has_value()) << m;
  }
  EXPECT_THROW(named_model_input("m5"), std::invalid_argument);
  EXPECT_THROW(named_model_recipe("resnet"), std::invalid_argument);
  try {
    named_model_spec("m9");
    ADD_FAILURE() << "m9 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("m0, m1, m2, m3, m4"));
  }
}

// The thesis's batch (32), images per epoch and learning rates; m3 and m4 take M2's.
TEST(ArchModels, TheThesisRecipes) {
  for (const char* m : {"m0", "m1"}) {
    const auto r = named_model_recipe(m);
    ASSERT_TRUE(r.has_value()) << m;
    EXPECT_EQ(r->batch, 32) << m;
    EXPECT_EQ(r->images, 1000) << m;
    EXPECT_DOUBLE_EQ(r->lr, 0.001) << m;
  }
  for (const char* m : {"m2", "m3", "m4"}) {
    const auto r = named_model_recipe(m);
    ASSERT_TRUE(r.has_value()) << m;
    EXPECT_EQ(r->batch, 32) << m;
    EXPECT_EQ(r->images, 2000) << m;
    EXPECT_DOUBLE_EQ(r->lr, 0.00001) << m;
  }
}

// The table of arch.hpp: every model fits its input, ends in 4x4 or 5x5 planes
// before the dense layers, and each does at least 1.2x the work of the one before.
TEST(ArchModels, FlopsAndParametersAsTabulated) {
  const struct {
    const char* name;
    long long flops, params;
    Shape3 last_planes;
  } table[] = {{"m0", 3655632, 210998, {32, 8, 8}},    {"m1", 5710800, 326198, {32, 10, 10}},
               {"m2", 7130600, 123824, {32, 5, 5}},    {"m3", 25306600, 268208, {64, 5, 5}},
               {"m4", 122394600, 1119824, {128, 5, 5}}};
  long long previous = 0;
  for (const auto& row : table) {
    const Shape3 input = *named_model_input(row.name);
    const Cost c = cost_of(named_model_spec(row.name), input);
    EXPECT_EQ(c.flops, row.flops) << row.name;
    EXPECT_EQ(c.params, row.params) << row.name;
    EXPECT_GT(c.flops, previous * 6 / 5) << row.name << " is not clearly more work than the model before";
    previous = c.flops;
    const Arch arch = parse_arch(named_model_spec(row.name));
    const auto shapes = layer_shapes(arch, input, 10);
    for (std::size_t i = 0; i < arch.layers.size(); ++i)
      if (arch.layers[i].kind == LayerKind::Flatten) {
        EXPECT_EQ(shapes[i - 1], row.last_planes) << row.name;
      }
  }
}
