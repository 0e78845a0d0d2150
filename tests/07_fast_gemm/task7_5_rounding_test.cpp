// Task 7.5: rounding FP32 to TF32 (to nearest, ties away from zero, as cvt.rna.tf32.f32) and
// to BF16 (to nearest, ties to even), on the host
// (these tests run without a GPU) and on the device (the same code, rounding.cuh).
// The reference (fast_gemm_check.hpp, reference_round) works in double arithmetic,
// without looking at bits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <vector>

#include "07_fast_gemm/rounding.cuh"
#include "07_fast_gemm/rounding_kernels.hpp"
#include "fast_gemm_check.hpp"

using namespace course;
using namespace course::s07test;

namespace {

float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
std::uint32_t to_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Values that catch each way of getting it wrong: ties that go up and down, one step
// either side of a tie, a carry into the exponent, the largest float (which rounds to
// infinity), subnormals, zeros of both signs, and random values of every magnitude.
std::vector<float> hard_values() {
  std::vector<float> v = {0.f, -0.f, 1.f, -1.f, 1.5f, 3.14159265f, 1e-3f, 65504.f, 1e30f,
                          std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::min(), std::numeric_limits<float>::denorm_min(), 1e-40f};
  for (std::uint32_t mant : {0x00001000u, 0x00003000u, 0x00008000u, 0x00018000u, 0x00007FFFu, 0x00008001u,
                             0x00017FFFu, 0x007FFFFFu, 0x007FF000u, 0x00000FFFu, 0x00001001u})
    for (std::uint32_t exp : {0x3F800000u, 0x40000000u, 0x00000000u, 0x7F000000u})
      for (std::uint32_t sign : {0u, 0x80000000u}) v.push_back(from_bits(sign | exp | mant));
  Rng rng(5, 1);
  for (int i = 0; i < 20000; ++i) v.push_back(from_bits(static_cast<std::uint32_t>(rng.next_u64()) & 0xFF7FFFFFu));
  return v;
}

// x with its low 24 - bits significand bits cleared: rounded toward zero (for normal values).
float truncated(float x, int bits) { return from_bits(to_bits(x) & ~((1u << (24 - bits)) - 1u)); }

// The slip that explains `got` as the rounding of x to `bits` significant bits with the other tie
// rule, toward zero, or to one bit more or fewer; "" when none does.
std::string rounding_slip(float x, float got, int bits, bool ties_away) {
  const std::uint32_t g = to_bits(got);
  if (g == to_bits(reference_round(x, bits, !ties_away)))
    return std::string("a tie rounded ") + (ties_away ? "to even" : "away from zero") + " where it goes " +
           (ties_away ? "away from zero" : "to even");
  if (g == to_bits(truncated(x, bits))) return "rounded toward zero (the low bits cut off, not rounded)";
  for (int other : {bits - 1, bits + 1})
    if (g == to_bits(reference_round(x, other, ties_away)) || g == to_bits(reference_round(x, other, !ties_away)))
      return "rounded to " + std::to_string(other) + " significant bits, not " + std::to_string(bits) +
             " (a mask or a shift off by one)";
  return "";
}

// The value, its bits and the input's position in the list, for a message.
std::string describe_float(float v) {
  std::ostringstream o;
  o.precision(9);
  o << v << " (0x" << std::hex << to_bits(v) << ")";
  return o.str();
}

// The first value `round` rounds differently from the reference, as a message naming the task:
// the input, its position among hard_values(), both results with their bits, and the slip.
template <typename Round>
std::string first_difference(const char* name, int bits, bool ties_away, Round&& round) {
  const std::vector<float> values = hard_values();
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float x = values[i], want = reference_round(x, bits, ties_away), got = round(x);
    if (to_bits(got) != to_bits(want)) {
      std::ostringstream o;
      o << "Task 7.5: " << name << "(" << describe_float(x) << "), value " << i << " of the " << values.size()
        << " tested: expected " << describe_float(want) << " (the nearest value with " << bits
        << " significant bits, ties " << (ties_away ? "away from zero" : "to even") << "), actual "
        << describe_float(got);
      const std::string slip = rounding_slip(x, got, bits, ties_away);
      if (!slip.empty()) o << "\n    diagnosis: " << slip;
      return o.str();
    }
  }
  return "";
}

}  // namespace

TEST(Task7_5_Rounding, Tf32RoundsToNearestTiesAwayFromZero) {
  const std::string d = first_difference("round_to_tf32", 11, true, [](float x) { return round_to_tf32(x); });
  EXPECT_TRUE(d.empty()) << d;
}

TEST(Task7_5_Rounding, Bf16RoundsToNearestTiesToEven) {
  const std::string d = first_difference("round_to_bf16", 8, false, [](float x) { return round_to_bf16(x); });
  EXPECT_TRUE(d.empty()) << d;
}

TEST(Task7_5_Rounding, NanStaysNanAndInfinityStaysInfinity) {
  const float inf = std::numeric_limits<float>::infinity();
  for (const std::uint32_t nan_bits : {0x7FC00000u, 0x7F800001u, 0xFF800100u, 0x7FFFFFFFu}) {
    const float nan = from_bits(nan_bits);
    EXPECT_TRUE(std::isnan(round_to_tf32(nan))) << "Task 7.5: round_to_tf32 of NaN 0x" << std::hex << nan_bits
                                                << " gave " << describe_float(round_to_tf32(nan));
    EXPECT_TRUE(std::isnan(round_to_bf16(nan)))
        << "Task 7.5: round_to_bf16 of NaN 0x" << std::hex << nan_bits << " gave " << describe_float(round_to_bf16(nan))
        << " (a NaN whose payload is in the low bits must not become infinity)";
  }
  EXPECT_EQ(round_to_tf32(inf), inf) << "Task 7.5: round_to_tf32 of +infinity";
  EXPECT_EQ(round_to_bf16(-inf), -inf) << "Task 7.5: round_to_bf16 of -infinity";
}

TEST(Task7_5_Rounding, TheDeviceRoundsAsTheHostDoes) {
  SKIP_WITHOUT_GPU();
  const std::vector<float> v = hard_values();
  DeviceBuffer<float> in, tf32(v.size());
  DeviceBuffer<__nv_bfloat16> bf16(v.size());
  in.upload(v);
  convert_to_bf16(in.get(), bf16.get(), static_cast<long>(v.size()));
  round_array_to_tf32(in.get(), tf32.get(), static_cast<long>(v.size()));
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<std::uint16_t> got_bf16(v.size());
  CUDA_CHECK(cudaMemcpy(got_bf16.data(), bf16.get(), v.size() * 2, cudaMemcpyDeviceToHost));
  const std::vector<float> got_tf32 = tf32.download();
  // The first value of each array the device rounds differently from the host, with the slip.
  for (std::size_t i = 0; i < v.size(); ++i)
    if (got_bf16[i] != round_to_bf16_bits(v[i])) {
      const float got = from_bits(static_cast<std::uint32_t>(got_bf16[i]) << 16), want = round_to_bf16(v[i]);
      const std::string slip = rounding_slip(v[i], got, 8, false);
      ADD_FAILURE() << "Task 7.5: convert_to_bf16 of " << describe_float(v[i]) << ", value " << i << " of the "
                    << v.size() << " tested: expected " << describe_float(want) << " (round_to_bf16_bits on the host), "
                    << "actual " << describe_float(got) << (slip.empty() ? "" : "\n    diagnosis: " + slip);
      break;
    }
  for (std::size_t i = 0; i < v.size(); ++i)
    if (to_bits(got_tf32[i]) != to_bits(round_to_tf32(v[i]))) {
      // The one of the two that differs from the reference is diagnosed (round_to_tf32 on the host, as a rule).
      const float host = round_to_tf32(v[i]), want = reference_round(v[i], 11, true);
      const bool host_wrong = to_bits(host) != to_bits(want);
      const std::string slip = rounding_slip(v[i], host_wrong ? host : got_tf32[i], 11, true);
      ADD_FAILURE() << "Task 7.5: the GPU's cvt.rna.tf32.f32 and round_to_tf32 disagree on " << describe_float(v[i])
                    << ", value " << i << " of the " << v.size() << " tested: the host gives " << describe_float(host)
                    << ", the GPU " << describe_float(got_tf32[i]) << ", the nearest TF32 value (ties away from zero) "
                    << "is " << describe_float(want)
                    << (slip.empty() ? ""
                                     : std::string("\n    diagnosis (of the ") + (host_wrong ? "host" : "GPU") +
                                           "'s value): " + slip);
      break;
    }
}
