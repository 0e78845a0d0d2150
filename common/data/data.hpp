/// @file data.hpp
/// @brief Data sets: IDX (MNIST, Fashion-MNIST), CIFAR-10 binary, CSV, a folder of
/// PNG and JPEG images, and a built-in synthetic set: the readers, each for one format
/// (load_data.hpp finds a set by name and applies the transforms).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/model/arch.hpp"

namespace course {

/// A bad or missing data file. The message names the file and the problem.
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Images and labels in memory.
///
/// `images` is [size(), C, H, W] (NCHW), every value normalised to [0, 1];
/// `labels[i]` is in [0, classes).
struct Dataset {
  std::string name;    ///< "fashion-mnist", "mnist", "cifar10", "csv", "folder", "synthetic"
  std::string source;  ///< where it came from: a folder or "built-in"
  Shape3 shape;        ///< shape of one example
  int classes = 0;
  std::vector<std::string> class_names;  ///< one per class
  std::vector<float> images;
  std::vector<int> labels;

  int size() const { return static_cast<int>(labels.size()); }
  /// Pointer to example i: shape.size() floats.
  const float* image(int i) const { return images.data() + static_cast<long>(i) * shape.size(); }
  /// Keeps only the first n examples (n <= 0 keeps all).
  void truncate(long n);
  /// The same kind of data with no examples yet (name, source, shape, classes; no images or
  /// labels): the start of a set carved out of this one, such as a validation split.
  Dataset empty_like() const;
};

/// A training set, its test set, and the validation set held out of the
/// training set (empty unless DataOptions::val_fraction > 0, load_data.hpp).
struct DataSplit {
  Dataset train, test, val;
  bool synthetic_fallback = false;  ///< true when no real data was found
  std::string note;                 ///< one line for the user: what was loaded, or why the fallback
};

/// A picture size, height by width (0 x 0: none given).
struct ImageSize {
  int h = 0, w = 0;
  bool empty() const { return h == 0 || w == 0; }
  std::string str() const { return std::to_string(h) + "x" + std::to_string(w); }  ///< "40x40"
  bool operator==(const ImageSize& o) const { return h == o.h && w == o.w; }
};

/// "prefix0", "prefix1", ...: the class names of a set whose files name none.
std::vector<std::string> numbered_names(int classes, const std::string& prefix);

/// The whole file, read with one call. Throws DataError naming the file when
/// it is missing, a folder, or cannot be read.
std::vector<unsigned char> read_file_bytes(const std::string& path);

/// Reads an IDX image file and its label file (gzip or plain, by content).
Dataset load_idx(const std::string& images_path, const std::string& labels_path, const std::string& name);

/// The parser of load_idx() on the two files' bytes already in memory (gzip or
/// plain, by content); the paths only name them in messages and give
/// Dataset::source. Throws DataError like load_idx().
Dataset parse_idx(const std::vector<unsigned char>& images_bytes, const std::string& images_path,
                  const std::vector<unsigned char>& labels_bytes, const std::string& labels_path,
                  const std::string& name);

/// Reads CIFAR-10 binary batches (each record: 1 label byte, 3072 pixel bytes).
Dataset load_cifar10(const std::vector<std::string>& paths);

/// The parser of load_cifar10() on the bytes of one batch file already in
/// memory; `path` only names it. Throws DataError like load_cifar10().
Dataset parse_cifar10(const std::vector<unsigned char>& bytes, const std::string& path);

/// Reads a CSV file: one example per line, numeric features first, an integer
/// class label last; an optional header line of non-numeric cells is skipped.
/// Features are scaled to [0, 1] with the per-column minimum and maximum given
/// (pass empty vectors to compute them from this file and return them; null
/// pointers compute them without returning them). Values outside the given
/// range, as in a test set scaled with its training set's range, are clamped;
/// a constant column becomes 0. classes is the largest label + 1.
Dataset load_csv(const std::string& path, std::vector<float>* column_min, std::vector<float>* column_max);

/// The parser of load_csv() on the file's text already in memory; `path` only
/// names it. Throws DataError like load_csv().
Dataset parse_csv(const std::string& text, const std::string& path, std::vector<float>* column_min,
                  std::vector<float>* column_max);

/// One decoded picture: `channels` (1 gray, or 3 red, green, blue) planes of
/// height x width values in [0, 1], row-major, planes one after the other (CHW).
struct Image {
  int channels = 0, height = 0, width = 0;
  std::vector<float> values;
};

/// What decode_image() accepts at most: larger pictures are refused before
/// their pixels are allocated.
struct ImageLimits {
  int max_side = 16384;                 ///< pixels on either side
  long max_pixels = 64L * 1024 * 1024;  ///< width x height (64 Mi: 768 MiB decoded as RGB floats x 4)
};

/// True when this build can decode PNG and JPEG (it found stb_image: the
/// Debian package libstb-dev, or .carry/include/stb/stb_image.h).
bool image_decoding_available();

/// Decodes a PNG or JPEG file's bytes with stb_image (which of the two is
/// decided by the content, not by the name). Gray and gray + alpha pictures
/// give 1 channel, RGB and RGBA 3: an alpha channel is dropped, not blended
/// (16-bit PNGs are read to 8 bits). `path` only names the file in messages.
/// Throws DataError naming `path` and the reason: an empty file, bytes that
/// are neither PNG nor JPEG, a picture larger than `limits`, a PNG whose
/// chunks are cut short or fail their CRC (stb_image checks neither), a JPEG
/// cut short (no end-of-image marker after its last scan), and anything
/// stb_image refuses, with its reason. Without stb_image in the build, every call throws a DataError that
/// says to install libstb-dev.
Image decode_image(const std::vector<unsigned char>& bytes, const std::string& path, const ImageLimits& limits = {});

/// Reads an image folder: `dir/train/<class>/<picture>` and `dir/test/<class>/<picture>`.
///
/// - Classes are the subfolders of dir/train, sorted by name (byte order);
///   label k is the k-th. Every one of them must be a folder of dir/test too
///   (it may be empty there), and dir/test may have no other class; a train
///   class without pictures is an error.
/// - Pictures are the files named *.png, *.jpg or *.jpeg (any case), read in
///   name order; other files and subfolders are skipped and counted in the
///   note (with the first one's path), names starting with '.' silently.
/// - Each picture is decoded with decode_image() and resized bilinearly
///   (course::resize_bilinear, as --resize does) to `size`, else to the size
///   of the first training picture.
/// - Channels: 3 when any picture of either set is in colour (gray ones are
///   repeated over the three), else 1. --channels then converts as for any
///   data set.
///
/// Throws DataError naming the file or folder at fault; the message of a
/// picture stb_image cannot read carries stb_image's reason. `note` says what
/// was read, resized and skipped.
DataSplit load_image_folder(const std::string& dir, ImageSize size = {});

/// The built-in synthetic set: `n` examples of shape `shape` in `classes`
/// classes, each class a distinct pattern plus noise. Deterministic in `seed`.
Dataset make_synthetic(int n, Shape3 shape, int classes, std::uint64_t seed);

/// Gathers minibatches in the order of one epoch (course::epoch_order).
///
/// Every stage uses it, so the same seed gives the same batches everywhere.
class Batcher {
 public:
  /// Shuffled order of (seed, epoch) when `shuffle`, else 0..n-1. `data` is held
  /// by reference and must outlive the Batcher. Throws std::invalid_argument
  /// when batch_size < 1.
  Batcher(const Dataset& data, int batch_size, std::uint64_t seed, int epoch, bool shuffle = true);
  int num_batches() const;
  /// Copies batch b into x ([B, C, H, W]) and y ([B]); returns B (the last batch may be smaller).
  int gather(int b, float* x, int* y) const;
  /// The example indices of this epoch, in visiting order.
  const std::vector<int>& order() const { return order_; }

 private:
  const Dataset& data_;
  int batch_;
  std::vector<int> order_;
};

}  // namespace course
