// Tests of --dataset folder (common/data/data_folder.cpp): decode_image() and
// load_image_folder() on PNG and JPEG files these tests write themselves with
// stb_image_write (Debian: libstb-dev), in a fresh temporary folder each.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/data/data.hpp"
#include "common/data/load_data.hpp"
#include "common/data/data_transform.hpp"
#include "error_of.hpp"

#ifdef COURSE_HAVE_STB_WRITE
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>
#endif

namespace course {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<unsigned char>;
using testing::HasSubstr;

using course::testkit::error_of;

/// A fresh folder for one test, removed at the end of it.
class TempDir {
 public:
  TempDir() {
    const auto* info = testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("course_folder_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  /// The path of `name` in this folder, its parent folders made.
  std::string file(const std::string& name) const {
    const fs::path p = path_ / name;
    fs::create_directories(p.parent_path());
    return p.string();
  }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

TEST(DataFolderWithoutStb, SaysToInstallLibstb) {
  if (image_decoding_available()) GTEST_SKIP() << "this build has stb_image";
  EXPECT_THAT(error_of<DataError>([] { decode_image({0x89, 'P', 'N', 'G'}, "x.png"); }), HasSubstr("libstb-dev"));
  EXPECT_THAT(error_of<DataError>([] { load_image_folder("/tmp"); }), HasSubstr("apt-get install libstb-dev"));
}

// Everything below writes its pictures with stb_image_write.
#ifdef COURSE_HAVE_STB_WRITE

Bytes read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_all(const std::string& path, const Bytes& b) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

/// A w x h picture of `comp` interleaved channels (1 gray, 2 gray+alpha, 3 RGB,
/// 4 RGBA): channel c of pixel (x, y) is base[c] + x * dx + y * dy (mod 256).
struct Picture {
  int w, h, comp;
  std::vector<unsigned char> pixels;
  unsigned char at(int x, int y, int c) const { return pixels[static_cast<std::size_t>((y * w + x) * comp + c)]; }
};

Picture picture(int w, int h, int comp, std::vector<int> base, int dx = 3, int dy = 5) {
  Picture p{w, h, comp, {}};
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < comp; ++c)
        p.pixels.push_back(static_cast<unsigned char>((base[static_cast<std::size_t>(c)] + x * dx + y * dy) % 256));
  return p;
}

void write_png(const std::string& path, const Picture& p) {
  ASSERT_NE(stbi_write_png(path.c_str(), p.w, p.h, p.comp, p.pixels.data(), p.w * p.comp), 0) << path;
}
void write_jpg(const std::string& path, const Picture& p, int quality = 100) {
  ASSERT_NE(stbi_write_jpg(path.c_str(), p.w, p.h, p.comp, p.pixels.data(), quality), 0) << path;
}

#define REQUIRE_STB() \
  if (!image_decoding_available()) GTEST_SKIP() << "built without stb_image (apt-get install libstb-dev)"

// ---- decode_image ------------------------------------------------------------------------

TEST(DataFolderDecode, PngIsLosslessInEveryChannelLayout) {
  REQUIRE_STB();
  TempDir dir;
  for (int comp : {1, 2, 3, 4}) {
    const Picture p = picture(6, 4, comp, {10, 100, 200, 255});
    const std::string path = dir.file("p" + std::to_string(comp) + ".png");
    write_png(path, p);
    const Image image = decode_image(read_all(path), path);
    const int channels = comp <= 2 ? 1 : 3;  // alpha dropped
    EXPECT_EQ(image.channels, channels) << comp;
    EXPECT_EQ(image.height, 4);
    EXPECT_EQ(image.width, 6);
    ASSERT_EQ(image.values.size(), static_cast<std::size_t>(channels * 24));
    for (int c = 0; c < channels; ++c)
      for (int y = 0; y < 4; ++y)
        for (int x = 0; x < 6; ++x)
          EXPECT_EQ(image.values[static_cast<std::size_t>(c * 24 + y * 6 + x)], p.at(x, y, c) / 255.0f)
              << "comp " << comp << " channel " << c << " at " << x << "," << y;
  }
}

TEST(DataFolderDecode, JpegComesBackWithinItsLoss) {
  REQUIRE_STB();
  TempDir dir;
  // Smooth ramps, as photographs are; quality 100 (no chroma subsampling).
  const Picture p = picture(16, 16, 3, {40, 120, 200}, 4, 2);
  const std::string path = dir.file("ramp.jpg");
  write_jpg(path, p);
  const Image image = decode_image(read_all(path), path);
  ASSERT_EQ(image.channels, 3);
  ASSERT_EQ(image.values.size(), 3u * 256);
  float worst = 0;
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 16; ++y)
      for (int x = 0; x < 16; ++x)
        worst = std::max(worst, std::abs(image.values[static_cast<std::size_t>(c * 256 + y * 16 + x)] -
                                         p.at(x, y, c) / 255.0f));
  EXPECT_LE(worst, 6.0f / 255.0f) << "JPEG at quality 100 is off by at most a few levels";
  RecordProperty("worst_error_in_levels", std::to_string(worst * 255.0f));
}

TEST(DataFolderDecode, TruncatedFilesAreRefusedWithTheirName) {
  REQUIRE_STB();
  TempDir dir;
  const Picture p = picture(32, 32, 3, {0, 50, 100}, 7, 11);
  write_png(dir.file("whole.png"), p);
  write_jpg(dir.file("whole.jpg"), p, 90);
  for (const std::string name : {"whole.png", "whole.jpg"}) {
    Bytes b = read_all(dir.file(name));
    ASSERT_NO_THROW(decode_image(b, name));
    for (std::size_t keep : {b.size() - 1, b.size() * 2 / 3, b.size() / 2, std::size_t{40}, std::size_t{9}}) {
      const Bytes cut(b.begin(), b.begin() + static_cast<long>(keep));
      const std::string path = dir.file("cut_" + std::to_string(keep) + "_" + name);
      write_all(path, cut);
      const std::string e = error_of<DataError>([&] { decode_image(read_all(path), path); });
      EXPECT_THAT(e, HasSubstr(path)) << keep;
      EXPECT_TRUE(e.find("truncated") != std::string::npos || e.find("stb_image: ") != std::string::npos)
          << keep << ": " << e;
    }
  }
  // A JPEG cut in its image data: named as such (stb_image would say "expected marker").
  Bytes jpg = read_all(dir.file("whole.jpg"));
  jpg.resize(jpg.size() - 40);
  EXPECT_THAT(error_of<DataError>([&] { decode_image(jpg, "cut.jpg"); }),
              HasSubstr("cut.jpg: this JPEG file is truncated"));
}

TEST(DataFolderDecode, NotAPictureIsRefusedWithTheirName) {
  REQUIRE_STB();
  const Bytes text = {'h', 'e', 'l', 'l', 'o', ',', ' ', 'p', 'i', 'c', 't', 'u', 'r', 'e', '\n'};
  EXPECT_THAT(error_of<DataError>([&] { decode_image(text, "notes.png"); }),
              HasSubstr("notes.png: not a PNG or JPEG picture (it starts with the text \"hello, picture \")"));
  EXPECT_THAT(error_of<DataError>([&] { decode_image({0x00, 0x01, 0xFE}, "odd.jpg"); }),
              HasSubstr("odd.jpg: not a PNG or JPEG picture (it starts with the bytes 00 01 fe)"));
  EXPECT_THAT(error_of<DataError>([&] { decode_image({}, "empty.png"); }), HasSubstr("empty.png: file is empty"));
  // The right signature and nothing after it.
  EXPECT_THAT(error_of<DataError>([&] { decode_image({0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'}, "sig.png"); }),
              HasSubstr("sig.png: this PNG file is truncated: it ends at byte 8 before its IEND chunk"));
  EXPECT_THAT(error_of<DataError>([&] { decode_image({0xFF, 0xD8, 0xFF, 0xD9}, "soi.jpg"); }),
              HasSubstr("soi.jpg: this JPEG file is truncated or corrupt: it has no image data"));
}

TEST(DataFolderDecode, PicturesLargerThanTheLimitsAreRefused) {
  REQUIRE_STB();
  TempDir dir;
  write_png(dir.file("wide.png"), picture(20000, 1, 1, {0}));
  const std::string wide = dir.file("wide.png");
  EXPECT_THAT(error_of<DataError>([&] { decode_image(read_all(wide), wide); }),
              HasSubstr(wide + ": a picture of 20000x1 pixels (width x height) is larger than the loader accepts "
                               "(at most 16384 on a side"));
  write_png(dir.file("ten.png"), picture(10, 10, 1, {0}));
  const Bytes ten = read_all(dir.file("ten.png"));
  EXPECT_NO_THROW(decode_image(ten, "ten.png", ImageLimits{10, 100}));
  EXPECT_THROW(decode_image(ten, "ten.png", ImageLimits{9, 1000}), DataError);
  EXPECT_THROW(decode_image(ten, "ten.png", ImageLimits{100, 99}), DataError);
}

// ---- load_image_folder -------------------------------------------------------------------

/// DIR/train/<class>/ and DIR/test/<class>/ with gray 6x4 PNGs: picture j of
/// class k has base value 40k + j.
void write_gray_set(const TempDir& dir, const std::vector<std::string>& classes, int train_each, int test_each) {
  for (std::size_t k = 0; k < classes.size(); ++k) {
    for (int j = 0; j < train_each; ++j)
      write_png(dir.file("train/" + classes[k] + "/" + std::to_string(j) + ".png"),
                picture(6, 4, 1, {static_cast<int>(40 * k) + j}));
    for (int j = 0; j < test_each; ++j)
      write_png(dir.file("test/" + classes[k] + "/" + std::to_string(j) + ".PNG"),
                picture(6, 4, 1, {static_cast<int>(40 * k) + 20 + j}));
  }
}

TEST(DataFolderLoad, LabelsFollowTheSortedClassFolders) {
  REQUIRE_STB();
  TempDir dir;
  write_gray_set(dir, {"b_dog", "a_cat", "c_fox"}, 2, 1);
  const DataSplit s = load_image_folder(dir.str());
  EXPECT_EQ(s.train.class_names, (std::vector<std::string>{"a_cat", "b_dog", "c_fox"}));
  EXPECT_EQ(s.test.class_names, s.train.class_names);
  EXPECT_EQ(s.train.classes, 3);
  EXPECT_EQ(s.train.labels, (std::vector<int>{0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(s.test.labels, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(s.train.shape, (Shape3{1, 4, 6})) << "channels x height x width";
  EXPECT_EQ(s.train.name, "folder");
  EXPECT_EQ(s.train.source, (fs::path(dir.str()) / "train").string());
  // Picture 1 of b_dog (label 1, written first: base 40 * 0 + 1), so pixel (x, y) is 1 + 3x + 5y.
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 6; ++x) EXPECT_EQ(s.train.image(3)[y * 6 + x], static_cast<float>(1 + 3 * x + 5 * y) / 255.0f);
  EXPECT_EQ(s.train.image(0)[0], 40.0f / 255.0f) << "a_cat, written second";
  EXPECT_EQ(s.test.image(2)[0], 100.0f / 255.0f) << "c_fox's test picture: 40 * 2 + 20";
  EXPECT_THAT(s.note, HasSubstr("folder: 6 train, 3 test pictures in 3 classes (a_cat, b_dog, c_fox) from " + dir.str() +
                                ", 1x4x6 gray"));
}

TEST(DataFolderLoad, ColourJpegAndGrayPngTogether) {
  REQUIRE_STB();
  TempDir dir;
  const Picture rgb = picture(8, 8, 3, {40, 120, 200}, 2, 1);
  const Picture gray = picture(8, 8, 1, {90}, 1, 2);
  write_jpg(dir.file("train/a/rgb.jpeg"), rgb);
  write_png(dir.file("train/b/gray.png"), gray);
  write_jpg(dir.file("test/a/rgb.JPG"), rgb);
  (void)dir.file("test/b/none");  // makes test/b: a class without test pictures
  const DataSplit s = load_image_folder(dir.str());
  ASSERT_EQ(s.train.shape, (Shape3{3, 8, 8})) << "colour when any picture is colour";
  EXPECT_EQ(s.test.size(), 1);
  for (int c = 0; c < 3; ++c)
    for (int j = 0; j < 64; ++j) {
      EXPECT_NEAR(s.train.image(0)[c * 64 + j], rgb.at(j % 8, j / 8, c) / 255.0f, 6.0f / 255.0f);
      EXPECT_EQ(s.train.image(1)[c * 64 + j], gray.at(j % 8, j / 8, 0) / 255.0f) << "gray repeated";
    }
  EXPECT_THAT(s.note, HasSubstr("3x8x8 colour; 1 gray picture repeated over 3 channels"));
}

TEST(DataFolderLoad, ResizedToTheFirstPictureOrToResize) {
  REQUIRE_STB();
  TempDir dir;
  const Picture small = picture(2, 2, 1, {0}, 100, 50);  // 0 100 / 50 150
  write_png(dir.file("train/a/1.png"), picture(4, 4, 1, {10}));
  write_png(dir.file("train/a/2.png"), small);
  write_png(dir.file("test/a/1.png"), picture(8, 3, 1, {10}));
  DataSplit s = load_image_folder(dir.str());
  EXPECT_EQ(s.train.shape, (Shape3{1, 4, 4}));
  std::vector<float> plane;
  for (unsigned char v : small.pixels) plane.push_back(v / 255.0f);
  std::vector<float> want(16);
  resize_bilinear(plane.data(), 2, 2, want.data(), 4, 4);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), s.train.image(1))) << "the same bilinear function as --resize";
  EXPECT_NEAR(s.train.image(1)[1], 25.0f / 255.0f, 1e-6f) << "0.75 * 0 + 0.25 * 100";
  EXPECT_THAT(s.note, HasSubstr("2 resized to 4x4 (bilinear, the size of the first training picture)"));

  s = load_image_folder(dir.str(), ImageSize{5, 7});
  EXPECT_EQ(s.train.shape, (Shape3{1, 5, 7}));
  EXPECT_EQ(s.test.shape, (Shape3{1, 5, 7}));
  EXPECT_THAT(s.note, HasSubstr("3 resized to 5x7 (bilinear, --resize)"));
}

TEST(DataFolderLoad, BadPicturesNameTheirFile) {
  REQUIRE_STB();
  TempDir dir;
  write_gray_set(dir, {"a", "b"}, 2, 1);
  const std::string text = dir.file("train/b/readme.png");
  write_all(text, {'j', 'u', 's', 't', ' ', 't', 'e', 'x', 't'});
  EXPECT_THAT(error_of<DataError>([&] { load_image_folder(dir.str()); }),
              HasSubstr(text + ": not a PNG or JPEG picture (it starts with the text \"just text\")"));
  fs::remove(text);
  Bytes png = read_all(dir.file("test/a/0.PNG"));
  png.resize(png.size() / 2);
  write_all(dir.file("test/a/0.PNG"), png);
  EXPECT_THAT(error_of<DataError>([&] { load_image_folder(dir.str()); }),
              HasSubstr(dir.file("test/a/0.PNG") + ": this PNG file is truncated: "));
}

TEST(DataFolderDecode, ADamagedByteIsFoundByTheCrc) {
  REQUIRE_STB();
  TempDir dir;
  write_png(dir.file("p.png"), picture(16, 16, 3, {1, 2, 3}, 9, 13));
  Bytes b = read_all(dir.file("p.png"));
  ASSERT_NO_THROW(decode_image(b, "p.png"));
  b[b.size() - 20] ^= 0x10;  // inside the IDAT chunk's data
  EXPECT_THAT(error_of<DataError>([&] { decode_image(b, "p.png"); }),
              HasSubstr("p.png: this PNG file is corrupt: its IDAT chunk at byte "));
}

TEST(DataFolderLoad, FolderMistakesAreNamed) {
  REQUIRE_STB();
  TempDir dir;
  const fs::path root(dir.str());
  EXPECT_THAT(error_of<DataError>([&] { load_image_folder((root / "nowhere").string()); }),
              HasSubstr("nowhere: the folder does not exist"));
  EXPECT_THAT(error_of<DataError>([&] { load_image_folder(dir.str()); }),
              HasSubstr((root / "train").string() + ": missing: --dataset folder reads"));  // an empty folder
  fs::create_directories(root / "train");
  fs::create_directories(root / "test");
  EXPECT_THAT(error_of<DataError>([&] { load_image_folder(dir.str()); }),
              HasSubstr((root / "train").string() + ": holds no class folders"));
  write_gray_set(dir, {"cat", "dog"}, 1, 1);
  fs::remove_all(root / "test" / "dog");
  EXPECT_THAT(error_of<DataError>([&] { load_image_folder(dir.str()); }),
              HasSubstr((root / "test" / "dog").string() + ": missing: every class folder of"));
  fs::create_directories(root / "test" / "dog");
  fs::create_directories(root / "test" / "emu");
  EXPECT_THAT(error_of<DataError>([&] { load_image_folder(dir.str()); }),
              HasSubstr((root / "test" / "emu").string() + ": a class that"));
  fs::remove_all(root / "test" / "emu");
  fs::create_directories(root / "train" / "emu");
  fs::create_directories(root / "test" / "emu");
  EXPECT_THAT(error_of<DataError>([&] { load_image_folder(dir.str()); }),
              HasSubstr((root / "train" / "emu").string() + ": holds no .png, .jpg or .jpeg picture"));
}

TEST(DataFolderLoad, OtherFilesAreSkippedAndCounted) {
  REQUIRE_STB();
  TempDir dir;
  write_gray_set(dir, {"a", "b"}, 1, 1);
  write_all(dir.file("train/a/notes.txt"), {'x'});
  write_all(dir.file("train/b/.DS_Store"), {'x'});  // hidden: skipped silently
  write_all(dir.file("test/LICENSE"), {'x'});
  const DataSplit s = load_image_folder(dir.str());
  EXPECT_EQ(s.train.size(), 2);
  EXPECT_THAT(s.note, HasSubstr("skipped 2 entries that are not .png, .jpg or .jpeg pictures or class folders (the "
                                "first: "));
  fs::remove(dir.file("test/LICENSE"));
  EXPECT_THAT(load_image_folder(dir.str()).note,
              HasSubstr("skipped 1 entry that is not a .png, .jpg or .jpeg picture or a class folder (" +
                        dir.file("train/a/notes.txt") + ")"));
}

TEST(DataFolderLoad, ThroughLoadDataWithChannelsAndValidation) {
  REQUIRE_STB();
  TempDir dir;
  write_gray_set(dir, {"a", "b", "c"}, 10, 2);
  DataOptions o;
  o.dataset = "folder";
  o.data_dir = dir.str();
  o.resize = ImageSize{8, 8};
  o.channels = 3;
  o.val_fraction = 0.2;
  const DataSplit s = load_data(o);
  EXPECT_EQ(s.train.shape, (Shape3{3, 8, 8}));
  EXPECT_EQ(s.val.shape, (Shape3{3, 8, 8}));
  EXPECT_EQ(s.train.size() + s.val.size(), 30);
  EXPECT_EQ(s.val.size(), 6);
  EXPECT_EQ(s.test.size(), 6);
  EXPECT_THAT(s.note, HasSubstr("1x8x8 gray; 36 resized to 8x8 (bilinear, --resize)"));
  EXPECT_THAT(s.note, HasSubstr("; 1 -> 3 channels; 6 of the 30 training examples held out for validation"));
  o.data_dir.clear();
  EXPECT_THAT(error_of<DataError>([&] { load_data(o); }), HasSubstr("dataset folder needs --data-dir"));
}

#endif  // COURSE_HAVE_STB_WRITE

}  // namespace
}  // namespace course
