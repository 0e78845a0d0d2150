// Every input the fuzzers found a bug with, replayed on every build: each file
// in fuzz/regressions/<target>/ goes through that target's harness
// (fuzz/harness.hpp), which runs the real parser and checks what it returns.
// Under the asan preset this is the sanitizer check of the fix, too.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "fuzz/harness.hpp"
#include "trainer_process.hpp"

namespace course {
namespace {

namespace fs = std::filesystem;

const fs::path kRegressions = fs::path(COURSE_SOURCE_DIR) / "fuzz" / "regressions";

using trainer_process::slurp;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(FuzzRegressions, EveryKeptInputPassesItsHarness) {
  int files = 0;
  for (const fuzz::Target& target : fuzz::targets()) {
    const fs::path dir = kRegressions / target.name;
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (!entry.is_regular_file()) continue;
      SCOPED_TRACE(std::string(target.name) + ": " + entry.path().filename().string());
      const std::string bytes = slurp(entry.path());
      EXPECT_NO_THROW(target.run(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
      ++files;
    }
  }
  EXPECT_GE(files, 2) << "the regressions folder " << kRegressions << " lost its inputs";
  RecordProperty("files_tried", files);
}

TEST(FuzzRegressions, EveryTargetHasAFolderName) {
  // The script tools/test.d/30-fuzz runs the targets by these names.
  std::vector<std::string> names;
  for (const fuzz::Target& t : fuzz::targets()) names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{"idx", "idx_gzip", "cifar10", "csv", "model_file", "checkpoint", "arch",
                                             "image"}));
}

// What each fix does, stated once more in words.

// A flatten after a padded conv of 4 x 50014 x 50014 values made a layer of
// -1793767152 inputs (int overflow): now refused by layer_shapes.
TEST(FuzzRegressions, ArchLayerOfMoreThanIntMaxValuesIsRefused) {
  const Arch a = parse_arch(slurp(kRegressions / "arch" / "flatten-of-more-than-int-max-values"));
  const std::string e = error_of([&] { layer_shapes(a, {1, 28, 28}, 10); });
  EXPECT_NE(e.find("layer 1 'conv4k3p50001s2' on input 1x28x28: its output has more than 2147483647"), std::string::npos)
      << e;
  EXPECT_NE(error_of([] { layer_shapes(parse_arch("fc100000,relu,fc100000,fc10"), {1, 28, 28}, 10); })
                .find("layer 3 'fc100000' on input 100000x1x1: more than 2147483647 (2^31 - 1) weights"),
            std::string::npos);
  EXPECT_NE(error_of([] { layer_shapes(parse_arch("conv100000k1,conv100000k100000p50000,flatten,fc10"), {1, 28, 28}, 10); })
                .find("layer 2"),
            std::string::npos);
  EXPECT_NE(error_of([] { layer_shapes(parse_arch("fc10"), {65536, 65536, 1}, 10); }).find("input shape 65536x65536x1"),
            std::string::npos);
  EXPECT_NO_THROW(layer_shapes(parse_arch("conv16k3p1,relu,pool2,flatten,fc10"), {3, 32, 32}, 10));
}

// A feature of -5.6e64 became -Inf as a float, and scaling made it NaN.
TEST(FuzzRegressions, CsvNumberBeyondFloatIsRefused) {
  const std::string text = slurp(kRegressions / "csv" / "feature-beyond-float-range-scales-to-nan");
  const std::string e = error_of([&] { parse_csv(text, "fuzz.csv", nullptr, nullptr); });
  EXPECT_NE(e.find("fuzz.csv: line 2, column 2: '-555"), std::string::npos) << e;
  EXPECT_NE(e.find("is outside the range of a float"), std::string::npos) << e;
  EXPECT_NO_THROW(parse_csv("3.0e38,0\n-3.0e38,1\n", "ok.csv", nullptr, nullptr));
}

// Pictures --dataset folder must refuse, each with the reason in words. Some
// of them stb_image alone gets wrong: a JPEG Huffman table of more than 256
// codes makes stb_image 2.27 (Debian 12) write past its tables (found by the
// image fuzz target on its first run), a PNG cut inside its last CRC loads,
// and a 20000x20000 header would be decoded (or fail for memory) rather than
// refused before anything is allocated.
TEST(FuzzRegressions, ImagesAreRefusedWithTheirReason) {
  if (!image_decoding_available()) GTEST_SKIP() << "built without stb_image (apt-get install libstb-dev)";
  const fs::path dir = kRegressions / "image";
  auto refusal = [&](const std::string& name) {
    const std::string b = slurp(dir / name);
    return error_of([&] { decode_image(std::vector<unsigned char>(b.begin(), b.end()), name); });
  };
  // Each picture, and words its refusal must hold.
  const std::vector<std::pair<std::string, std::string>> refusals = {
      {"png-header-claims-20000x20000",
       "png-header-claims-20000x20000: a picture of 20000x20000 pixels (width x height) is larger than"},
      {"png-cut-inside-the-crc-of-iend", "this PNG file is truncated: its IEND chunk at byte"},
      {"png-idat-byte-flipped", "this PNG file is corrupt: its IDAT chunk at byte 33 fails its CRC"},
      {"jpeg-huffman-table-of-300-codes", "this JPEG file is corrupt: a Huffman table at byte "},
      {"jpeg-huffman-table-of-300-codes", " defines 300 codes (at most 256)"},
      // The input the fuzzer found: its table segment also runs past the end of the file.
      {"jpeg-huffman-table-of-more-than-256-codes-cut-short", "this JPEG file is truncated"},
      {"jpeg-cut-inside-its-scan", "this JPEG file is truncated: its image data is not followed"},
      // Its scan's third component decodes with AC table 3, which no segment defines: stb_image 2.27
      // would decode with whatever its memory held and read past its tables.
      {"jpeg-scan-uses-an-undefined-huffman-table",
       "this JPEG file is corrupt: the scan at byte 593 decodes with AC Huffman table 3, which no Huffman"}};
  for (const auto& [name, words] : refusals) {
    const std::string e = refusal(name);
    EXPECT_NE(e.find(words), std::string::npos) << name << ": " << e;
  }
}

}  // namespace
}  // namespace course
