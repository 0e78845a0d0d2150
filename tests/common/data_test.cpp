// Tests of the data layer (common/data/data.hpp): the IDX, CIFAR-10 and CSV loaders
// on small files written here, the synthetic set, load_data() and Batcher.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#ifdef COURSE_HAVE_ZLIB
#include <zlib.h>
#endif

#include "common/data/data.hpp"
#include "common/data/load_data.hpp"
#include "common/core/rng.hpp"
#include "error_of.hpp"

namespace fs = std::filesystem;
using course::Batcher;
using course::DataError;
using course::DataOptions;
using course::Dataset;
using course::Shape3;
using testing::HasSubstr;
using testing::Not;

namespace {

using Bytes = std::vector<unsigned char>;

/// A fresh folder for one test, removed at the end of it.
class TempDir {
 public:
  TempDir() {
    const auto* info = testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() / ("course_data_" + std::string(info->test_suite_name()) + "_" +
                                         info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

/// Changes the working directory for one test (load_data searches ./data).
class ChangeDir {
 public:
  explicit ChangeDir(const std::string& dir) : old_(fs::current_path()) { fs::current_path(dir); }
  ~ChangeDir() { fs::current_path(old_); }

 private:
  fs::path old_;
};

void write_bytes(const std::string& path, const Bytes& b) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

#ifdef COURSE_HAVE_ZLIB
void write_gzip(const std::string& path, const Bytes& b) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, b.data(), static_cast<unsigned>(b.size())), static_cast<int>(b.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}
#endif

void put_be32(Bytes* b, std::uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b->push_back(static_cast<unsigned char>(v >> s));
}

/// An IDX image file of n images of rows x cols whose pixel j is (seed + 7j) mod 256.
Bytes idx_images(std::uint32_t n, std::uint32_t rows, std::uint32_t cols, int seed = 0) {
  Bytes b;
  put_be32(&b, 0x00000803);
  put_be32(&b, n);
  put_be32(&b, rows);
  put_be32(&b, cols);
  for (std::uint32_t j = 0; j < n * rows * cols; ++j)
    b.push_back(static_cast<unsigned char>((seed + 7 * j) % 256));
  return b;
}

Bytes idx_labels(const std::vector<int>& labels) {
  Bytes b;
  put_be32(&b, 0x00000801);
  put_be32(&b, static_cast<std::uint32_t>(labels.size()));
  for (int y : labels) b.push_back(static_cast<unsigned char>(y));
  return b;
}

using course::testkit::error_of;

/// The DataError load_idx throws for the image file `images` and the label file `labels` in dir.
std::string idx_error(const TempDir& dir, const std::string& images, const std::string& labels) {
  return error_of<DataError>([&] { course::load_idx(dir.file(images), dir.file(labels), "mnist"); });
}

/// The DataError load_idx() throws for an image file and a label file of these bytes; it must name the
/// file `named` ("img" or "lab").
std::string idx_refusal(const Bytes& images, const Bytes& labels, const std::string& named) {
  TempDir dir;
  write_bytes(dir.file("img"), images);
  write_bytes(dir.file("lab"), labels);
  const std::string msg = idx_error(dir, "img", "lab");
  EXPECT_THAT(msg, HasSubstr(dir.file(named))) << "the message does not name the file";
  return msg;
}

/// The DataError load_csv() throws for a file of these contents, which must name the file.
std::string csv_refusal(const std::string& contents) {
  TempDir dir;
  const std::string path = dir.file("x.csv");
  write_text(path, contents);
  const std::string msg = error_of<DataError>([&] { course::load_csv(path, nullptr, nullptr); });
  EXPECT_THAT(msg, HasSubstr(path)) << "the message does not name the file";
  return msg;
}

/// One CIFAR-10 record: the label, then R, G and B planes filled with r, g, b.
Bytes cifar_record(int label, unsigned char r, unsigned char g, unsigned char b) {
  Bytes rec(3073);
  rec[0] = static_cast<unsigned char>(label);
  std::fill(rec.begin() + 1, rec.begin() + 1 + 1024, r);
  std::fill(rec.begin() + 1 + 1024, rec.begin() + 1 + 2048, g);
  std::fill(rec.begin() + 1 + 2048, rec.end(), b);
  return rec;
}

Bytes concat(std::initializer_list<Bytes> parts) {
  Bytes all;
  for (const Bytes& p : parts) all.insert(all.end(), p.begin(), p.end());
  return all;
}

}  // namespace

// ---- IDX ----------------------------------------------------------------------

TEST(DataIdx, PlainFilesRoundTrip) {
  TempDir dir;
  const Bytes img = idx_images(3, 2, 4);
  write_bytes(dir.file("img"), img);
  write_bytes(dir.file("lab"), idx_labels({7, 0, 9}));
  const Dataset d = course::load_idx(dir.file("img"), dir.file("lab"), "fashion-mnist");
  EXPECT_EQ(d.size(), 3);
  EXPECT_EQ(d.shape, (Shape3{1, 2, 4}));
  EXPECT_EQ(d.classes, 10);
  EXPECT_EQ(d.labels, (std::vector<int>{7, 0, 9}));
  ASSERT_EQ(d.images.size(), 24u);
  for (std::size_t j = 0; j < 24; ++j) EXPECT_EQ(d.images[j], static_cast<float>(img[16 + j]) / 255.0f) << j;
  EXPECT_EQ(d.image(1)[0], static_cast<float>(img[16 + 8]) / 255.0f);
  ASSERT_EQ(d.class_names.size(), 10u);
  EXPECT_EQ(d.class_names[0], "T-shirt/top");
  EXPECT_EQ(d.class_names[9], "Ankle boot");
  EXPECT_EQ(d.name, "fashion-mnist");
  EXPECT_EQ(d.source, dir.str());
}

TEST(DataIdx, MnistClassNamesAreDigits) {
  TempDir dir;
  write_bytes(dir.file("img"), idx_images(1, 28, 28));
  write_bytes(dir.file("lab"), idx_labels({3}));
  const Dataset d = course::load_idx(dir.file("img"), dir.file("lab"), "mnist");
  EXPECT_EQ(d.shape, (Shape3{1, 28, 28}));
  ASSERT_EQ(d.class_names.size(), 10u);
  EXPECT_EQ(d.class_names[3], "3");
}

#ifdef COURSE_HAVE_ZLIB
TEST(DataIdx, GzipFilesRoundTrip) {
  TempDir dir;
  const Bytes img = idx_images(5, 3, 3, 11);
  write_gzip(dir.file("img.gz"), img);
  write_gzip(dir.file("lab.gz"), idx_labels({1, 2, 3, 4, 5}));
  // Gzip or not is decided by the content, not the name.
  write_gzip(dir.file("lab_no_suffix"), idx_labels({1, 2, 3, 4, 5}));
  const Dataset d = course::load_idx(dir.file("img.gz"), dir.file("lab.gz"), "mnist");
  EXPECT_EQ(d.size(), 5);
  EXPECT_EQ(d.labels, (std::vector<int>{1, 2, 3, 4, 5}));
  for (std::size_t j = 0; j < d.images.size(); ++j)
    EXPECT_EQ(d.images[j], static_cast<float>(img[16 + j]) / 255.0f);
  EXPECT_EQ(course::load_idx(dir.file("img.gz"), dir.file("lab_no_suffix"), "mnist").labels, d.labels);
}

TEST(DataIdx, TruncatedGzipIsRefused) {
  TempDir dir;
  write_gzip(dir.file("full.gz"), idx_images(50, 28, 28));
  std::ifstream in(dir.file("full.gz"), std::ios::binary);
  Bytes gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  gz.resize(gz.size() / 2);
  write_bytes(dir.file("half.gz"), gz);
  write_bytes(dir.file("lab"), idx_labels(std::vector<int>(50, 1)));
  const std::string msg = idx_error(dir, "half.gz", "lab");
  EXPECT_THAT(msg, HasSubstr(dir.file("half.gz")));
  EXPECT_THAT(msg, HasSubstr("ends early"));
}
#else
TEST(DataIdx, GzipWithoutZlibSaysToGunzip) {
  TempDir dir;
  write_bytes(dir.file("img.gz"), {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3});
  write_bytes(dir.file("lab"), idx_labels({1}));
  const std::string msg = idx_error(dir, "img.gz", "lab");
  EXPECT_THAT(msg, HasSubstr(dir.file("img.gz")));
  EXPECT_THAT(msg, HasSubstr("gunzip"));
}
#endif

TEST(DataIdx, WrongMagicIsRefused) {
  TempDir dir;
  write_bytes(dir.file("img"), idx_images(2, 2, 2));
  write_bytes(dir.file("lab"), idx_labels({1, 2}));
  // The two files swapped: the label file's magic where an image file's is expected.
  const std::string msg = idx_error(dir, "lab", "img");
  EXPECT_THAT(msg, HasSubstr(dir.file("lab")));
  EXPECT_THAT(msg, HasSubstr("magic"));
  EXPECT_THAT(msg, HasSubstr("0x00000801"));
  EXPECT_THAT(msg, HasSubstr("0x00000803"));

  Bytes junk = idx_images(2, 2, 2);
  junk[2] = 0x12;
  write_bytes(dir.file("junk"), junk);
  EXPECT_THAT(idx_error(dir, "junk", "lab"), HasSubstr("wrong magic number 0x00001203"));
}

TEST(DataIdx, EmptyFileIsRefused) {
  EXPECT_THAT(idx_refusal({}, idx_labels({1}), "img"), HasSubstr("empty"));
}

TEST(DataIdx, OneByteFileIsRefused) {
  const std::string msg = idx_refusal({0}, idx_labels({1}), "img");
  EXPECT_THAT(msg, HasSubstr("truncated header: expected 16 bytes"));
  EXPECT_THAT(msg, HasSubstr("found 1"));
}

TEST(DataIdx, TruncatedHeaderIsRefused) {
  Bytes lab = idx_labels({1});
  lab.resize(6);
  const std::string msg = idx_refusal(idx_images(1, 2, 2), lab, "lab");
  EXPECT_THAT(msg, HasSubstr("truncated header: expected 8 bytes"));
  EXPECT_THAT(msg, HasSubstr("found 6"));
}

TEST(DataIdx, TruncatedBodyIsRefused) {
  Bytes img = idx_images(3, 2, 3);  // 16 + 18 bytes
  img.resize(30);
  const std::string msg = idx_refusal(img, idx_labels({1, 2, 3}), "img");
  EXPECT_THAT(msg, HasSubstr("truncated"));
  EXPECT_THAT(msg, HasSubstr("expected 34 bytes"));
  EXPECT_THAT(msg, HasSubstr("found 30"));

  Bytes lab = idx_labels({1, 2, 3});
  lab.pop_back();
  EXPECT_THAT(idx_refusal(idx_images(3, 2, 3), lab, "lab"), HasSubstr("/lab: truncated: expected 11 bytes"));
}

TEST(DataIdx, ExtraBytesAreRefused) {
  Bytes img = idx_images(1, 2, 2);
  img.push_back(0);
  EXPECT_THAT(idx_refusal(img, idx_labels({1}), "img"), HasSubstr("/img: extra bytes"));
}

TEST(DataIdx, CountMismatchIsRefused) {
  TempDir dir;
  write_bytes(dir.file("img"), idx_images(3, 2, 2));
  write_bytes(dir.file("lab"), idx_labels({1, 2}));
  const std::string msg = idx_error(dir, "img", "lab");
  EXPECT_THAT(msg, HasSubstr(dir.file("img")));
  EXPECT_THAT(msg, HasSubstr(dir.file("lab")));
  EXPECT_THAT(msg, HasSubstr("3 images"));
  EXPECT_THAT(msg, HasSubstr("2 labels"));
}

TEST(DataIdx, LabelOutOfRangeIsRefused) {
  EXPECT_THAT(idx_refusal(idx_images(3, 2, 2), idx_labels({1, 10, 2}), "lab"), HasSubstr("label 10 at index 1"));
}

TEST(DataIdx, MissingFileIsRefused) {
  TempDir dir;
  write_bytes(dir.file("lab"), idx_labels({1}));
  const std::string msg = idx_error(dir, "nope", "lab");
  EXPECT_THAT(msg, HasSubstr(dir.file("nope")));
  EXPECT_THAT(msg, HasSubstr("cannot open"));
}

// ---- CIFAR-10 -----------------------------------------------------------------

TEST(DataCifar, RoundTrip) {
  TempDir dir;
  write_bytes(dir.file("a.bin"), concat({cifar_record(3, 255, 0, 51), cifar_record(9, 0, 102, 0)}));
  Bytes rec = cifar_record(0, 0, 0, 0);
  rec[1 + 2048 + 32 * 5 + 7] = 255;  // blue plane, row 5, column 7
  write_bytes(dir.file("b.bin"), rec);
  const Dataset d = course::load_cifar10({dir.file("a.bin"), dir.file("b.bin")});
  EXPECT_EQ(d.size(), 3);
  EXPECT_EQ(d.shape, (Shape3{3, 32, 32}));
  EXPECT_EQ(d.labels, (std::vector<int>{3, 9, 0}));
  EXPECT_EQ(d.classes, 10);
  EXPECT_EQ(d.class_names[0], "airplane");
  EXPECT_EQ(d.class_names[9], "truck");
  // NCHW: channel 0 is red, 1 green, 2 blue.
  EXPECT_EQ(d.image(0)[0], 1.0f);
  EXPECT_EQ(d.image(0)[1024], 0.0f);
  EXPECT_EQ(d.image(0)[2048 + 1023], 51.0f / 255.0f);
  EXPECT_EQ(d.image(1)[1024 + 500], 102.0f / 255.0f);
  EXPECT_EQ(d.image(2)[2 * 1024 + 5 * 32 + 7], 1.0f);
  EXPECT_EQ(std::count(d.image(2), d.image(2) + 3072, 1.0f), 1);
}

TEST(DataCifar, BadSizeIsRefused) {
  TempDir dir;
  Bytes b = concat({cifar_record(1, 1, 1, 1), cifar_record(2, 2, 2, 2)});
  b.resize(b.size() - 10);
  write_bytes(dir.file("short.bin"), b);
  const std::string msg = error_of<DataError>([&] { course::load_cifar10({dir.file("short.bin")}); });
  EXPECT_THAT(msg, HasSubstr(dir.file("short.bin")));
  EXPECT_THAT(msg, HasSubstr("3073"));

  write_bytes(dir.file("empty.bin"), {});
  EXPECT_THAT(error_of<DataError>([&] { course::load_cifar10({dir.file("empty.bin")}); }),
              HasSubstr(dir.file("empty.bin")));
}

TEST(DataCifar, BadLabelIsRefused) {
  TempDir dir;
  write_bytes(dir.file("x.bin"), concat({cifar_record(1, 1, 1, 1), cifar_record(10, 2, 2, 2)}));
  const std::string msg = error_of<DataError>([&] { course::load_cifar10({dir.file("x.bin")}); });
  EXPECT_THAT(msg, HasSubstr(dir.file("x.bin")));
  EXPECT_THAT(msg, HasSubstr("record 1 has label 10"));
}

// ---- CSV ----------------------------------------------------------------------

TEST(DataCsv, RoundTripWithHeader) {
  TempDir dir;
  write_text(dir.file("train.csv"), "a, b ,c,label\n1,10,5,0\n3,20,5,2\r\n2,15,5,1\n\n");
  std::vector<float> lo, hi;
  const Dataset d = course::load_csv(dir.file("train.csv"), &lo, &hi);
  EXPECT_EQ(d.size(), 3);
  EXPECT_EQ(d.shape, (Shape3{3, 1, 1}));
  EXPECT_EQ(d.classes, 3);
  EXPECT_EQ(d.class_names, (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_EQ(d.labels, (std::vector<int>{0, 2, 1}));
  EXPECT_EQ(lo, (std::vector<float>{1, 10, 5}));
  EXPECT_EQ(hi, (std::vector<float>{3, 20, 5}));
  // Min-max scaled per column; the constant third column maps to 0.
  EXPECT_EQ(d.images, (std::vector<float>{0, 0, 0, 1, 1, 0, 0.5f, 0.5f, 0}));

  // A second file scaled with the first one's ranges, clamped into [0, 1].
  write_text(dir.file("test.csv"), "2.5,0,7,1\n");
  const Dataset t = course::load_csv(dir.file("test.csv"), &lo, &hi);
  EXPECT_EQ(t.images, (std::vector<float>{0.75f, 0, 0}));
  EXPECT_EQ(t.classes, 2);
  EXPECT_EQ(lo, (std::vector<float>{1, 10, 5}));
}

TEST(DataCsv, NoHeaderAndNullScaling) {
  TempDir dir;
  write_text(dir.file("x.csv"), "0.5,-1e1,4\n1.5,10,0");
  const Dataset d = course::load_csv(dir.file("x.csv"), nullptr, nullptr);
  EXPECT_EQ(d.size(), 2);
  EXPECT_EQ(d.labels, (std::vector<int>{4, 0}));
  EXPECT_EQ(d.classes, 5);
  EXPECT_EQ(d.images, (std::vector<float>{0, 0, 1, 1}));
}

TEST(DataCsv, NonNumericCellIsRefused) {
  const std::string msg = csv_refusal("f1,f2,y\n1,2,0\n3,oops,1\n");
  EXPECT_THAT(msg, HasSubstr("line 3"));
  EXPECT_THAT(msg, HasSubstr("column 2"));
  EXPECT_THAT(msg, HasSubstr("oops"));
}

TEST(DataCsv, RaggedRowsAreRefused) {
  EXPECT_THAT(csv_refusal("1,2,0\n3,4,1\n5,1\n"), HasSubstr("line 3 has 2 cells, expected 3"));
}

TEST(DataCsv, BadLabelsAreRefused) {
  const std::string negative = csv_refusal("1,2,0\n3,4,-1\n");
  EXPECT_THAT(negative, HasSubstr("line 2"));
  EXPECT_THAT(negative, HasSubstr("negative"));
  EXPECT_THAT(csv_refusal("1,2,0.5\n"), HasSubstr("not a class number"));
}

TEST(DataCsv, EmptyFilesAreRefused) {
  EXPECT_THAT(csv_refusal(""), HasSubstr("empty"));
  EXPECT_THAT(csv_refusal("a,b,label\n\n"), HasSubstr("no examples"));
}

TEST(DataCsv, ScalingOfAnotherWidthIsRefused) {
  TempDir dir;
  write_text(dir.file("x.csv"), "1,2,0\n");
  std::vector<float> lo{0, 0, 0}, hi{1, 1, 1};
  EXPECT_THAT(error_of<DataError>([&] { course::load_csv(dir.file("x.csv"), &lo, &hi); }),
              HasSubstr("2 feature columns"));
}

// ---- synthetic ------------------------------------------------------------------

TEST(DataSynthetic, SameSeedSameBytes) {
  const Dataset a = course::make_synthetic(300, Shape3{1, 28, 28}, 10, 7);
  const Dataset b = course::make_synthetic(300, Shape3{1, 28, 28}, 10, 7);
  EXPECT_EQ(a.images, b.images);
  EXPECT_EQ(a.labels, b.labels);
  const Dataset c = course::make_synthetic(300, Shape3{1, 28, 28}, 10, 8);
  EXPECT_NE(a.images, c.images);
  EXPECT_NE(a.labels, c.labels);
}

TEST(DataSynthetic, ValuesInRangeAndClassesBalanced) {
  for (const Shape3 shape : {Shape3{1, 28, 28}, Shape3{3, 32, 32}, Shape3{5, 1, 1}, Shape3{2, 7, 9}}) {
    const Dataset d = course::make_synthetic(203, shape, 4, 1);
    EXPECT_EQ(d.size(), 203);
    EXPECT_EQ(d.shape, shape);
    EXPECT_EQ(d.classes, 4);
    EXPECT_EQ(d.class_names.back(), "class 3");
    EXPECT_EQ(d.name, "synthetic");
    ASSERT_EQ(static_cast<long>(d.images.size()), 203 * shape.size());
    const auto [lo, hi] = std::minmax_element(d.images.begin(), d.images.end());
    EXPECT_GE(*lo, 0.0f) << shape.str();
    EXPECT_LE(*hi, 1.0f) << shape.str();
    EXPECT_GT(*hi - *lo, 0.5f) << shape.str();
    std::vector<int> count(4);
    for (int y : d.labels) ++count.at(static_cast<std::size_t>(y));
    EXPECT_EQ(count, (std::vector<int>{51, 51, 51, 50})) << shape.str();
  }
  EXPECT_THROW(course::make_synthetic(10, Shape3{0, 1, 1}, 2, 1), std::invalid_argument);
  EXPECT_THROW(course::make_synthetic(10, Shape3{1, 1, 1}, 0, 1), std::invalid_argument);
}

// The promise behind the fallback: a small model learns the synthetic set in a
// couple of epochs. A linear softmax classifier (the weakest model a trainer
// runs) trained for two epochs on 2000 examples must reach 90% test accuracy.
TEST(DataSynthetic, LearnableByASmallModel) {
  const Shape3 shape{1, 28, 28};
  const Dataset train = course::make_synthetic(2000, shape, 10, 1);
  const Dataset test = course::make_synthetic(1000, shape, 10, 2);
  const int D = static_cast<int>(shape.size()), K = 10;
  std::vector<float> w(static_cast<std::size_t>(D * K), 0.0f), b(K, 0.0f), z(K);
  auto logits = [&](const float* x) {
    for (int k = 0; k < K; ++k) {
      float s = b[static_cast<std::size_t>(k)];
      for (int j = 0; j < D; ++j) s += w[static_cast<std::size_t>(k * D + j)] * x[j];
      z[static_cast<std::size_t>(k)] = s;
    }
  };
  const float lr = 0.01f;
  for (int epoch = 0; epoch < 2; ++epoch)
    for (int i : course::epoch_order(train.size(), 1, epoch)) {
      const float* x = train.image(i);
      logits(x);
      const float m = *std::max_element(z.begin(), z.end());
      float sum = 0;
      for (float& v : z) sum += (v = std::exp(v - m));
      for (int k = 0; k < K; ++k) {
        const float g = z[static_cast<std::size_t>(k)] / sum -
                        (k == train.labels[static_cast<std::size_t>(i)] ? 1.0f : 0.0f);
        b[static_cast<std::size_t>(k)] -= lr * g;
        for (int j = 0; j < D; ++j) w[static_cast<std::size_t>(k * D + j)] -= lr * g * x[j];
      }
    }
  int correct = 0;
  for (int i = 0; i < test.size(); ++i) {
    logits(test.image(i));
    correct += static_cast<int>(std::max_element(z.begin(), z.end()) - z.begin()) ==
               test.labels[static_cast<std::size_t>(i)];
  }
  EXPECT_GT(correct, 900) << "test accuracy " << correct / 10.0 << "%";
}

// ---- load_data ------------------------------------------------------------------

TEST(DataLoad, DatasetNames) {
  EXPECT_EQ(course::dataset_names(),
            (std::vector<std::string>{"fashion-mnist", "mnist", "cifar10", "csv", "folder", "synthetic"}));
}

TEST(DataLoad, UnknownDatasetIsInvalidArgument) {
  DataOptions o;
  o.dataset = "imagenet";
  const std::string msg = error_of<std::invalid_argument>([&] { course::load_data(o); });
  EXPECT_THAT(msg, HasSubstr("imagenet"));
  EXPECT_THAT(msg, HasSubstr("fashion-mnist, mnist, cifar10, csv, folder, synthetic"));
}

TEST(DataLoad, MissingDataDirIsAnError) {
  TempDir dir;
  for (const std::string name : {"fashion-mnist", "mnist", "cifar10", "csv"}) {
    DataOptions o;
    o.dataset = name;
    o.data_dir = dir.file("does-not-exist");
    const std::string msg = error_of<DataError>([&] { course::load_data(o); });
    EXPECT_THAT(msg, HasSubstr(o.data_dir)) << name;
    EXPECT_THAT(msg, HasSubstr("does not exist")) << name;
  }
  DataOptions o;
  o.data_dir = dir.str();  // exists, but empty
  const std::string msg = error_of<DataError>([&] { course::load_data(o); });
  EXPECT_THAT(msg, HasSubstr(dir.str()));
  EXPECT_THAT(msg, HasSubstr("train-images-idx3-ubyte"));
  EXPECT_THAT(msg, HasSubstr("t10k-labels-idx1-ubyte"));
}

// --data-dir naming a file (--data-dir /etc/passwd) is not "a folder that does not exist": the message says
// what the path is, for every data set read from a folder.
TEST(DataLoad, DataDirThatIsAFileIsSaidToBeAFile) {
  TempDir dir;
  const std::string file = dir.file("passwd");
  std::ofstream(file) << "root:x:0:0::/root:/bin/sh\n";
  for (const std::string name : {"fashion-mnist", "mnist", "cifar10", "csv"}) {
    DataOptions o;
    o.dataset = name;
    o.data_dir = file;
    const std::string msg = error_of<DataError>([&] { course::load_data(o); });
    EXPECT_THAT(msg, HasSubstr("--data-dir " + file + " is a file, not a folder")) << name << ": " << msg;
    EXPECT_THAT(msg, Not(HasSubstr("does not exist"))) << name << ": " << msg;
  }
}

TEST(DataLoad, FallsBackToSyntheticWhenNothingIsFound) {
  TempDir dir;
  ChangeDir cd(dir.str());  // no ./data here
  DataOptions o;
  o.dataset = "mnist";  // mnist has no system-wide location, so nothing is found
  const course::DataSplit mnist = course::load_data(o);
  EXPECT_TRUE(mnist.synthetic_fallback);
  EXPECT_EQ(mnist.train.size(), 8000);
  EXPECT_EQ(mnist.test.size(), 2000);
  EXPECT_EQ(mnist.train.shape, (Shape3{1, 28, 28}));
  EXPECT_THAT(mnist.note, HasSubstr("mnist not found (looked in ./data/mnist, ./data)"));
  EXPECT_THAT(mnist.note, HasSubstr("synthetic"));

  o.dataset = "cifar10";
  o.limit = 100;
  const course::DataSplit cifar = course::load_data(o);
  EXPECT_TRUE(cifar.synthetic_fallback);
  EXPECT_EQ(cifar.train.shape, (Shape3{3, 32, 32}));
  EXPECT_EQ(cifar.train.classes, 10);
  EXPECT_EQ(cifar.train.size(), 100);
  EXPECT_EQ(cifar.test.size(), 2000);

  o.dataset = "csv";  // csv has no built-in stand-in: it needs --data-dir
  EXPECT_THROW(course::load_data(o), DataError);
}

TEST(DataLoad, SyntheticOnRequest) {
  DataOptions o;
  o.dataset = "synthetic";
  const course::DataSplit s = course::load_data(o);
  EXPECT_FALSE(s.synthetic_fallback);
  EXPECT_EQ(s.train.size(), 8000);
  EXPECT_EQ(s.test.size(), 2000);
  EXPECT_EQ(s.train.shape, (Shape3{1, 28, 28}));
  EXPECT_EQ(s.test.shape, (Shape3{1, 28, 28}));
  EXPECT_NE(s.train.images, s.test.images);
  EXPECT_THAT(s.note, HasSubstr("synthetic"));
  EXPECT_EQ(course::load_data(o).train.images, s.train.images);
}

TEST(DataLoad, LimitTruncatesTheTrainingSetOnly) {
  DataOptions o;
  o.dataset = "synthetic";
  const course::DataSplit all = course::load_data(o);
  o.limit = 123;
  const course::DataSplit some = course::load_data(o);
  EXPECT_EQ(some.train.size(), 123);
  EXPECT_EQ(static_cast<long>(some.train.images.size()), 123 * some.train.shape.size());
  EXPECT_TRUE(std::equal(some.train.images.begin(), some.train.images.end(), all.train.images.begin()));
  EXPECT_EQ(some.test.size(), 2000);
  o.limit = 1000000;
  EXPECT_EQ(course::load_data(o).train.size(), 8000);

  Dataset d = all.train;
  d.truncate(0);
  EXPECT_EQ(d.size(), 8000);
  d.truncate(5);
  EXPECT_EQ(d.size(), 5);
  EXPECT_EQ(static_cast<long>(d.images.size()), 5 * d.shape.size());
}

TEST(DataLoad, IdxFromDataDir) {
  TempDir dir;
  write_bytes(dir.file("train-images-idx3-ubyte"), idx_images(4, 28, 28));
  write_bytes(dir.file("train-labels-idx1-ubyte"), idx_labels({0, 1, 2, 3}));
  write_bytes(dir.file("t10k-images-idx3-ubyte"), idx_images(2, 28, 28, 5));
#ifdef COURSE_HAVE_ZLIB
  write_gzip(dir.file("t10k-labels-idx1-ubyte.gz"), idx_labels({4, 5}));
#else
  write_bytes(dir.file("t10k-labels-idx1-ubyte"), idx_labels({4, 5}));
#endif
  DataOptions o;
  o.dataset = "mnist";
  o.data_dir = dir.str();
  o.limit = 3;
  const course::DataSplit s = course::load_data(o);
  EXPECT_FALSE(s.synthetic_fallback);
  EXPECT_EQ(s.train.size(), 3);
  EXPECT_EQ(s.test.labels, (std::vector<int>{4, 5}));
  EXPECT_EQ(s.train.name, "mnist");
  EXPECT_THAT(s.note, HasSubstr("mnist: 4 train, 2 test images from " + dir.str()));
}

TEST(DataLoad, CifarFromDataDir) {
  TempDir dir;
  fs::create_directories(dir.file("cifar-10-batches-bin"));
  for (int i = 1; i <= 5; ++i)
    write_bytes(dir.file("cifar-10-batches-bin/data_batch_" + std::to_string(i) + ".bin"),
                cifar_record(i, 1, 2, 3));
  write_bytes(dir.file("cifar-10-batches-bin/test_batch.bin"),
              concat({cifar_record(7, 0, 0, 0), cifar_record(8, 0, 0, 0)}));
  DataOptions o;
  o.dataset = "cifar10";
  o.data_dir = dir.str();  // the unpacked archive's folder is found inside it
  const course::DataSplit s = course::load_data(o);
  EXPECT_EQ(s.train.labels, (std::vector<int>{1, 2, 3, 4, 5}));
  EXPECT_EQ(s.test.labels, (std::vector<int>{7, 8}));
  EXPECT_EQ(s.train.shape, (Shape3{3, 32, 32}));
}

TEST(DataLoad, CsvFromDataDir) {
  TempDir dir;
  write_text(dir.file("train.csv"), "x,y,label\n0,0,0\n10,4,1\n");
  write_text(dir.file("test.csv"), "5,1,2\n");
  DataOptions o;
  o.dataset = "csv";
  o.data_dir = dir.str();
  const course::DataSplit s = course::load_data(o);
  EXPECT_EQ(s.train.shape, (Shape3{2, 1, 1}));
  // classes from both files; the test set scaled with the training set's ranges
  EXPECT_EQ(s.train.classes, 3);
  EXPECT_EQ(s.test.classes, 3);
  EXPECT_EQ(s.train.class_names.size(), 3u);
  EXPECT_EQ(s.test.images, (std::vector<float>{0.5f, 0.25f}));
  EXPECT_THAT(s.note, HasSubstr("csv: 2 train, 1 test"));
}

TEST(DataLoad, RealFashionMnist) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!fs::is_directory(dir)) GTEST_SKIP() << dir << " is missing (apt-get install dataset-fashion-mnist)";
  DataOptions o;
  o.data_dir = dir;
  const auto start = std::chrono::steady_clock::now();
  const course::DataSplit s = course::load_data(o);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("loaded Fashion-MNIST in %.3f s: %s\n", seconds, s.note.c_str());
  EXPECT_FALSE(s.synthetic_fallback);
  EXPECT_EQ(s.train.size(), 60000);
  EXPECT_EQ(s.test.size(), 10000);
  for (const Dataset* d : {&s.train, &s.test}) {
    EXPECT_EQ(d->shape, (Shape3{1, 28, 28}));
    EXPECT_EQ(d->classes, 10);
    EXPECT_EQ(d->class_names.at(9), "Ankle boot");
    EXPECT_TRUE(std::all_of(d->labels.begin(), d->labels.end(), [](int y) { return y >= 0 && y < 10; }));
    const auto [lo, hi] = std::minmax_element(d->images.begin(), d->images.end());
    EXPECT_EQ(*lo, 0.0f);
    EXPECT_EQ(*hi, 1.0f);
  }
  EXPECT_THAT(s.note, HasSubstr("fashion-mnist: 60000 train, 10000 test images from " + dir));
}

// ---- Batcher --------------------------------------------------------------------

namespace {
/// n examples of shape 1x1x2 whose features are (i, -i) and label i % 3.
Dataset numbered(int n) {
  Dataset d;
  d.shape = Shape3{1, 1, 2};
  d.classes = 3;
  for (int i = 0; i < n; ++i) {
    d.images.push_back(static_cast<float>(i));
    d.images.push_back(static_cast<float>(-i));
    d.labels.push_back(i % 3);
  }
  return d;
}
}  // namespace

TEST(Batcher, CoversEachIndexOnceAndLastBatchIsPartial) {
  const Dataset d = numbered(103);
  const Batcher batcher(d, 10, 42, 0);
  ASSERT_EQ(batcher.num_batches(), 11);
  std::vector<float> x(20);
  std::vector<int> y(10);
  std::vector<int> seen;
  for (int b = 0; b < batcher.num_batches(); ++b) {
    const int count = batcher.gather(b, x.data(), y.data());
    EXPECT_EQ(count, b < 10 ? 10 : 3);
    for (int i = 0; i < count; ++i) {
      const int idx = static_cast<int>(x[static_cast<std::size_t>(2 * i)]);
      EXPECT_EQ(x[static_cast<std::size_t>(2 * i + 1)], static_cast<float>(-idx));
      EXPECT_EQ(y[static_cast<std::size_t>(i)], idx % 3);
      EXPECT_EQ(idx, batcher.order()[static_cast<std::size_t>(b * 10 + i)]);
      seen.push_back(idx);
    }
  }
  std::sort(seen.begin(), seen.end());
  std::vector<int> all(103);
  for (int i = 0; i < 103; ++i) all[static_cast<std::size_t>(i)] = i;
  EXPECT_EQ(seen, all);
  EXPECT_THROW(batcher.gather(11, x.data(), y.data()), std::out_of_range);
}

TEST(Batcher, OrderDependsOnSeedAndEpoch) {
  const Dataset d = numbered(50);
  const Batcher a(d, 8, 42, 3), b(d, 8, 42, 3), c(d, 8, 42, 4), e(d, 8, 43, 3);
  EXPECT_EQ(a.order(), b.order());
  EXPECT_EQ(a.order(), course::epoch_order(50, 42, 3));
  EXPECT_NE(a.order(), c.order());
  EXPECT_NE(a.order(), e.order());
}

TEST(Batcher, NoShuffleKeepsFileOrder) {
  const Dataset d = numbered(5);
  const Batcher batcher(d, 2, 42, 0, false);
  EXPECT_EQ(batcher.order(), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(batcher.num_batches(), 3);
}

TEST(Batcher, BadBatchSizeIsRefused) {
  const Dataset d = numbered(5);
  EXPECT_THROW(Batcher(d, 0, 1, 0), std::invalid_argument);
  EXPECT_EQ(Batcher(numbered(0), 4, 1, 0).num_batches(), 0);
}
