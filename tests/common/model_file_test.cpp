// Tests of common/model/model_file: exact round trips, every refusal with its
// message, and the atomic write that keeps the previous file on failure.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>

#include "common/model/model_file.hpp"
#include "error_of.hpp"
#include "expect_contains.hpp"
#include "trainer_process.hpp"

namespace course {
namespace {

namespace fs = std::filesystem;

// A fresh, empty folder for one test.
fs::path model_file_dir() { return trainer_process::fresh_dir("course_model_file"); }

using trainer_process::slurp;

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A small model whose values include the awkward ones: -0, a denormal, the
// largest float, NaN and infinity must all come back bit for bit.
ModelFile sample_model(float scale = 1.0f) {
  ModelFile m;
  m.arch = "fc4,relu,fc3";
  m.input = Shape3{1, 2, 2};
  m.classes = 3;
  m.stage = "01_fc_softmax";
  Tensor w1({4, 4});
  for (std::size_t i = 0; i < w1.size(); ++i) w1[i] = scale * (static_cast<float>(i) * 0.37f - 2.0f);
  w1[0] = -0.0f;
  w1[1] = std::numeric_limits<float>::denorm_min();
  w1[2] = std::numeric_limits<float>::max();
  w1[3] = std::numeric_limits<float>::infinity();
  w1[4] = std::numeric_limits<float>::quiet_NaN();
  Tensor b1({4}, 0.25f * scale);
  Tensor w2({3, 4}, -1.5f * scale);
  Tensor b2({3}, 0.125f * scale);
  m.tensors = {{"fc1.weight", w1}, {"fc1.bias", b1}, {"fc2.weight", w2}, {"fc2.bias", b2}};
  return m;
}

std::string error_of(const std::string& path) {
  try {
    load_model(path);
  } catch (const ModelFileError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ModelFile, RoundTripIsBitExact) {
  const fs::path path = model_file_dir() / "model.bin";
  const ModelFile saved = sample_model();
  save_model(path.string(), saved);
  const ModelFile loaded = load_model(path.string());
  EXPECT_EQ(loaded.arch, saved.arch);
  EXPECT_EQ(loaded.input, saved.input);
  EXPECT_EQ(loaded.classes, saved.classes);
  EXPECT_EQ(loaded.stage, saved.stage);
  ASSERT_EQ(loaded.tensors.size(), saved.tensors.size());
  for (std::size_t i = 0; i < saved.tensors.size(); ++i) {
    EXPECT_EQ(loaded.tensors[i].name, saved.tensors[i].name);
    EXPECT_EQ(loaded.tensors[i].tensor.shape, saved.tensors[i].tensor.shape);
    ASSERT_EQ(loaded.tensors[i].tensor.size(), saved.tensors[i].tensor.size());
    EXPECT_EQ(std::memcmp(loaded.tensors[i].tensor.ptr(), saved.tensors[i].tensor.ptr(),
                          saved.tensors[i].tensor.size() * sizeof(float)),
              0)
        << "tensor " << saved.tensors[i].name << " changed";
  }
  EXPECT_FALSE(fs::exists(path.string() + ".tmp"));
}

TEST(ModelFile, LayoutIsLittleEndianWithMagicAndVersion) {
  const std::string bytes = encode_model(sample_model());
  EXPECT_EQ(bytes.substr(0, 8), "NNCMODEL");
  EXPECT_EQ(bytes.substr(8, 4), std::string("\x01\x00\x00\x00", 4));
  EXPECT_EQ(bytes.substr(12, 4), std::string("\x0c\x00\x00\x00", 4));  // length of "fc4,relu,fc3"
  EXPECT_EQ(bytes.substr(16, 12), "fc4,relu,fc3");
  // The trailing checksum covers everything before it.
  std::uint64_t stored = 0;
  for (int i = 0; i < 8; ++i)
    stored |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[bytes.size() - 8 + i])) << (8 * i);
  EXPECT_EQ(stored, fnv1a64(bytes.data(), bytes.size() - 8));
}

TEST(ModelFile, Fnv1aMatchesPublishedValues) {
  EXPECT_EQ(fnv1a64("", 0), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a", 1), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar", 6), 0x85944171f73967e8ull);
}

TEST(ModelFile, SaveReplacesThePreviousFile) {
  const fs::path path = model_file_dir() / "model.bin";
  save_model(path.string(), sample_model(1.0f));
  save_model(path.string(), sample_model(2.0f));
  EXPECT_EQ(load_model(path.string()).tensors[1].tensor[0], 0.5f);
  EXPECT_FALSE(fs::exists(path.string() + ".tmp"));
}

TEST(ModelFile, FailureMidWriteKeepsThePreviousFile) {
  const fs::path path = model_file_dir() / "model.bin";
  save_model(path.string(), sample_model(1.0f));
  const std::string before = slurp(path);
  for (std::size_t cut : {std::size_t{0}, std::size_t{20}, before.size() / 2, before.size() - 1}) {
    try {
      save_model(path.string(), sample_model(3.0f), cut);
      FAIL() << "the simulated failure after " << cut << " bytes did not throw";
    } catch (const ModelFileError& e) {
      EXPECT_CONTAINS(e.what(), path.string());
    }
    EXPECT_EQ(slurp(path), before) << "the previous model changed after a failure at byte " << cut;
    EXPECT_FALSE(fs::exists(path.string() + ".tmp")) << "a temporary file was left behind";
  }
  EXPECT_EQ(load_model(path.string()).tensors[1].tensor[0], 0.25f);
}

TEST(ModelFile, FailureOnAFirstSaveLeavesNothing) {
  const fs::path path = model_file_dir() / "model.bin";
  EXPECT_THROW(save_model(path.string(), sample_model(), 30), ModelFileError);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path.string() + ".tmp"));
}

TEST(ModelFile, SaveIntoAMissingFolderNamesTheFile) {
  const fs::path path = model_file_dir() / "no" / "such" / "model.bin";
  try {
    save_model(path.string(), sample_model());
    FAIL() << "expected ModelFileError";
  } catch (const ModelFileError& e) {
    EXPECT_CONTAINS(e.what(), path.string());
  }
}

TEST(ModelFile, SaveRefusesATensorWhoseDataDoesNotFitItsShape) {
  ModelFile m = sample_model();
  m.tensors[0].tensor.data.pop_back();
  EXPECT_THROW(save_model((model_file_dir() / "m.bin").string(), m), ModelFileError);
}

TEST(ModelFileLoad, MissingFile) {
  const fs::path path = model_file_dir() / "nothing.bin";
  const std::string msg = error_of(path.string());
  EXPECT_CONTAINS(msg, path.string());
  EXPECT_CONTAINS(msg, "cannot be opened");
}

TEST(ModelFileLoad, EmptyFile) {
  const fs::path path = model_file_dir() / "empty.bin";
  write_bytes(path, "");
  const std::string msg = error_of(path.string());
  EXPECT_CONTAINS(msg, path.string());
  EXPECT_CONTAINS(msg, "empty");
}

TEST(ModelFileLoad, BadMagic) {
  const fs::path dir = model_file_dir();
  std::string bytes = encode_model(sample_model());
  bytes.replace(0, 8, "PK\x03\x04zip!");
  write_bytes(dir / "a.bin", bytes);
  EXPECT_CONTAINS(error_of((dir / "a.bin").string()), "is not a model file");
  write_bytes(dir / "short.bin", "NNC");
  EXPECT_CONTAINS(error_of((dir / "short.bin").string()), "is not a model file");
}

TEST(ModelFileLoad, OtherFormatVersion) {
  const fs::path path = model_file_dir() / "v2.bin";
  std::string bytes = encode_model(sample_model());
  bytes[8] = 2;
  write_bytes(path, bytes);
  const std::string msg = error_of(path.string());
  EXPECT_CONTAINS(msg, path.string());
  EXPECT_CONTAINS(msg, "written with format version 2, this build reads version 1");
}

TEST(ModelFileLoad, TruncatedAtSeveralCutPoints) {
  const fs::path dir = model_file_dir();
  const std::string bytes = encode_model(sample_model());
  const std::size_t n = bytes.size();
  // Where each cut lands, and the field the message must name.
  const std::vector<std::pair<std::size_t, std::string>> cuts = {
      {10, "the format version"},
      {14, "the length of the architecture spec"},
      {20, "the architecture spec"},
      {30, "the input channels"},
      {34, "the input height"},
      {42, "the number of classes"},
      {46, "the length of the stage name"},
      {70, "the name of tensor 1 of 4"},
      {80, "the rank of tensor 1 of 4 'fc1.weight'"},
      {88, "dimension 2 of tensor 1 of 4 'fc1.weight'"},
      {n / 2, "the data of tensor 1 of 4 'fc1.weight'"},
      {n - 9, "the data of tensor 4 of 4 'fc2.bias'"},
      {n - 8, "the checksum"},
      {n - 1, "the checksum"},
  };
  for (const auto& [cut, field] : cuts) {
    const fs::path path = dir / ("cut" + std::to_string(cut) + ".bin");
    write_bytes(path, bytes.substr(0, cut));
    const std::string msg = error_of(path.string());
    EXPECT_CONTAINS(msg, path.string());
    EXPECT_CONTAINS(msg, "truncated");
    EXPECT_CONTAINS(msg, field);
  }
}

TEST(ModelFileLoad, CorruptedByteFailsTheChecksum) {
  const fs::path path = model_file_dir() / "bad.bin";
  std::string bytes = encode_model(sample_model());
  bytes[bytes.size() - 8 - 3] ^= 0x10;  // a bit of the last float
  write_bytes(path, bytes);
  const std::string msg = error_of(path.string());
  EXPECT_CONTAINS(msg, path.string());
  EXPECT_CONTAINS(msg, "checksum mismatch");
}

TEST(ModelFileLoad, BytesAfterTheChecksum) {
  const fs::path path = model_file_dir() / "long.bin";
  write_bytes(path, encode_model(sample_model()) + "xx");
  EXPECT_CONTAINS(error_of(path.string()), "2 unexpected bytes");
}

// Offset of the rank field of the first tensor in sample_model()'s file.
std::size_t first_rank_offset(const ModelFile& m) {
  return 8 + 4 + 4 + m.arch.size() + 12 + 4 + 4 + m.stage.size() + 4 + 4 + m.tensors[0].name.size();
}

void put_u32_at(std::string& bytes, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

TEST(ModelFileLoad, AbsurdSizesAreRefusedBeforeAllocating) {
  const fs::path dir = model_file_dir();
  const ModelFile m = sample_model();
  const std::string good = encode_model(m);
  const std::size_t rank_at = first_rank_offset(m);
  ASSERT_EQ(good.substr(rank_at, 4), std::string("\x02\x00\x00\x00", 4));

  std::string bytes = good;
  put_u32_at(bytes, rank_at, 1000);
  write_bytes(dir / "rank.bin", bytes);
  EXPECT_CONTAINS(error_of((dir / "rank.bin").string()), "has rank 1000");

  bytes = good;
  put_u32_at(bytes, rank_at + 4, 0);
  write_bytes(dir / "zero.bin", bytes);
  EXPECT_CONTAINS(error_of((dir / "zero.bin").string()), "dimension 1 of tensor 1 of 4 'fc1.weight' is 0");

  // Two dimensions of 2^31-1 ask for ~2^64 bytes: refused by the size left, not by std::bad_alloc.
  bytes = good;
  put_u32_at(bytes, rank_at + 4, 0x7fffffff);
  put_u32_at(bytes, rank_at + 8, 0x7fffffff);
  write_bytes(dir / "huge.bin", bytes);
  EXPECT_CONTAINS(error_of((dir / "huge.bin").string()), "truncated or damaged: the data of tensor 1 of 4");

  // A tensor count the file cannot hold.
  bytes = good;
  put_u32_at(bytes, rank_at - 4 - 10 - 4, 0xffffffff);
  write_bytes(dir / "count.bin", bytes);
  EXPECT_CONTAINS(error_of((dir / "count.bin").string()), "truncated: it ends inside the name of tensor 5 of 4294967295");

  // A string length beyond the end of the file.
  bytes = good;
  put_u32_at(bytes, 12, 0x7fffffff);
  write_bytes(dir / "arch.bin", bytes);
  EXPECT_CONTAINS(error_of((dir / "arch.bin").string()), "truncated: it ends inside the architecture spec");
}

TEST(ModelFileMatch, SameModelPasses) {
  const ModelFile m = sample_model();
  EXPECT_NO_THROW(check_model_matches(m, "fc4,relu,fc3", Shape3{1, 2, 2}, 3, "m.bin"));
  EXPECT_NO_THROW(check_model_matches(m, " FC4, relu ,fc3", Shape3{1, 2, 2}, 3, "m.bin"));
}

TEST(ModelFileMatch, OtherArchitectureIsRefusedNamingBoth) {
  ModelFile m = sample_model();
  m.arch = "fc256,relu,fc128,relu,fc10";
  m.input = Shape3{1, 28, 28};
  m.classes = 10;
  const std::string e = testkit::error_of<ModelFileError>(
      [&] { check_model_matches(m, "conv16k3p1,relu,pool2,flatten,fc10", Shape3{1, 28, 28}, 10, "model.bin"); });
  EXPECT_CONTAINS(e, "model.bin holds architecture 'fc256,relu,fc128,relu,fc10' for input 1x28x28");
  EXPECT_CONTAINS(e, "but this run builds 'conv16k3p1,relu,pool2,flatten,fc10' for input 1x28x28");
  EXPECT_CONTAINS(e, "(architecture differs)");
}

TEST(ModelFileMatch, OtherInputOrClassesAreRefused) {
  const ModelFile m = sample_model();
  const std::string e =
      testkit::error_of<ModelFileError>([&] { check_model_matches(m, "fc4,relu,fc3", Shape3{3, 2, 2}, 3, "m.bin"); });
  EXPECT_CONTAINS(e, "for input 1x2x2");
  EXPECT_CONTAINS(e, "for input 3x2x2");
  EXPECT_CONTAINS(e, "(input shape differs)");
  EXPECT_THROW(check_model_matches(m, "fc4,relu,fc3", Shape3{1, 2, 2}, 4, "m.bin"), ModelFileError);
}

}  // namespace
}  // namespace course
