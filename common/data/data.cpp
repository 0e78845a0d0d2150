/// @file data.cpp
/// @brief The file loaders (IDX, CIFAR-10 binary, CSV); load_data() finds them
/// (load_data.cpp; the image folder is in data_folder.cpp).
///
/// Every loader reads its file into memory in one go and parses the bytes
/// there: 60000 Fashion-MNIST images are 47 MB, and walking them byte by byte
/// through an iostream would cost seconds where a memcpy-speed pass costs
/// milliseconds. Every error message starts with the file it is about, so a
/// learner with a half-downloaded data set knows which file to fetch again.
#include "common/data/data.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef COURSE_HAVE_ZLIB
#include <zlib.h>
#endif

namespace fs = std::filesystem;

namespace course {

using Bytes = std::vector<unsigned char>;

// ---- reading files ----------------------------------------------------------

Bytes read_file_bytes(const std::string& path) {
  std::error_code ec;
  // Checked first because Linux lets a folder be opened like a file and only
  // fails on the read, with a message that does not say what went wrong.
  if (fs::is_directory(path, ec)) throw DataError(path + ": is a folder, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(path + ": cannot open (" + std::strerror(errno) + ")");
  const auto size = fs::file_size(path, ec);
  if (ec) throw DataError(path + ": cannot read its size (" + ec.message() + ")");
  Bytes bytes(static_cast<std::size_t>(size));
  if (size > 0 && !in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size)))
    throw DataError(path + ": read error after " + std::to_string(in.gcount()) + " of " +
                    std::to_string(size) + " bytes");
  return bytes;
}

namespace {

/// gzip files start with the two bytes 1f 8b (RFC 1952), whatever their name.
bool is_gzip(const Bytes& b) { return b.size() >= 2 && b[0] == 0x1f && b[1] == 0x8b; }

#ifdef COURSE_HAVE_ZLIB
/// Releases a zlib stream on every way out of gunzip(), exceptions included.
struct InflateGuard {
  z_stream* s;
  ~InflateGuard() { inflateEnd(s); }
};

/// Decompresses a whole gzip file held in memory (several members in a row are joined).
Bytes gunzip(const Bytes& gz, const std::string& path) {
  if (gz.size() > std::numeric_limits<uInt>::max())
    throw DataError(path + ": gzip files over 4 GiB are not supported; gunzip it first");
  z_stream s{};
  // 16 + MAX_WBITS: expect a gzip header and trailer (not a raw zlib stream).
  if (inflateInit2(&s, 16 + MAX_WBITS) != Z_OK) throw DataError(path + ": cannot start zlib");
  InflateGuard guard{&s};

  // The last 4 bytes of a gzip file hold the uncompressed size modulo 2^32: a
  // good first guess that saves growing the buffer several times. It is only a
  // guess: in a truncated file those bytes are compressed data, so it is capped
  // by deflate's best ratio (1032:1) and by 256 MiB.
  std::size_t guess = gz.size() * 4;
  if (gz.size() >= 18) {
    const unsigned char* t = gz.data() + gz.size() - 4;
    const std::size_t isize =
        std::size_t{t[0]} | std::size_t{t[1]} << 8 | std::size_t{t[2]} << 16 | std::size_t{t[3]} << 24;
    const std::size_t cap = std::min<std::size_t>(gz.size() * 1032, std::size_t{256} << 20);
    guess = std::max(guess, std::min(isize + 1, cap));  // +1: the end is seen without a regrow
  }
  Bytes out(std::max<std::size_t>(guess, 1 << 16));
  std::size_t produced = 0;

  s.next_in = const_cast<Bytef*>(gz.data());
  s.avail_in = static_cast<uInt>(gz.size());
  for (;;) {
    if (produced == out.size()) out.resize(out.size() * 2);
    const std::size_t room = std::min<std::size_t>(out.size() - produced, std::numeric_limits<uInt>::max());
    s.next_out = out.data() + produced;
    s.avail_out = static_cast<uInt>(room);
    const int ret = inflate(&s, Z_NO_FLUSH);
    produced += room - s.avail_out;
    if (ret == Z_STREAM_END) {
      // `cat a.gz b.gz` is a valid gzip file too: go on with the next member.
      if (s.avail_in >= 2 && s.next_in[0] == 0x1f && s.next_in[1] == 0x8b) {
        inflateReset(&s);
        continue;
      }
      break;  // anything else after the last member (padding) is ignored, as gunzip does
    }
    if (ret == Z_OK) continue;
    if (ret == Z_BUF_ERROR && s.avail_in > 0) continue;  // only needed more output room
    if (ret == Z_BUF_ERROR)
      throw DataError(path + ": the gzip data ends early (the download was cut short?); " +
                      std::to_string(produced) + " bytes decompressed before the end");
    throw DataError(path + ": corrupt gzip data (" + (s.msg ? s.msg : "zlib error " + std::to_string(ret)) +
                    ")");
  }
  out.resize(produced);
  return out;
}
#endif

/// A file's bytes, decompressed into `storage` when the content is gzip
/// (plain bytes are returned as they are, without a copy).
const Bytes& unzipped(const Bytes& bytes, const std::string& path, Bytes* storage, bool* was_gzip) {
  *was_gzip = is_gzip(bytes);
  if (!*was_gzip) return bytes;
#ifdef COURSE_HAVE_ZLIB
  *storage = gunzip(bytes, path);
  return *storage;
#else
  (void)storage;
  throw DataError(path + ": is gzip-compressed, and this build has no zlib; run `gunzip " + path +
                  "` and try again");
#endif
}

/// Reads a big-endian 32-bit number, the byte order of every IDX header field.
std::uint32_t be32(const unsigned char* p) {
  return std::uint32_t{p[0]} << 24 | std::uint32_t{p[1]} << 16 | std::uint32_t{p[2]} << 8 | p[3];
}

std::string hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", v);
  return buf;
}

/// Byte b -> b / 255 exactly as float, looked up rather than divided per pixel.
const float* byte_to_unit() {
  static const auto table = [] {
    std::vector<float> t(256);
    for (int i = 0; i < 256; ++i) t[static_cast<std::size_t>(i)] = static_cast<float>(i) / 255.0f;
    return t;
  }();
  return table.data();
}

std::string folder_of(const std::string& path) {
  const std::string parent = fs::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

// ---- IDX --------------------------------------------------------------------

constexpr std::uint32_t kIdxImagesMagic = 0x00000803;  // unsigned byte data, 3 dimensions
constexpr std::uint32_t kIdxLabelsMagic = 0x00000801;  // unsigned byte data, 1 dimension

/// Checks the size and the magic number of an IDX header; `what` is "image" or "label".
void check_idx_header(const Bytes& b, const std::string& path, const char* what, std::uint32_t magic,
                      std::size_t header_bytes, bool gz) {
  const std::string kind = std::string("an IDX ") + what + " file";
  if (b.empty())
    throw DataError(path + ": file is empty" + (gz ? " after gunzip" : "") + " (expected " + kind +
                    " of at least " + std::to_string(header_bytes) + " bytes)");
  // The magic number first: a swapped or foreign file is told apart even when
  // it is shorter than the header it was mistaken for.
  const std::uint32_t found = b.size() >= 4 ? be32(b.data()) : magic;
  if (found != magic) {
    std::string hint;
    if (found == kIdxImagesMagic) hint = " (this is an image file; were the two files swapped?)";
    if (found == kIdxLabelsMagic) hint = " (this is a label file; were the two files swapped?)";
    throw DataError(path + ": wrong magic number " + hex32(found) + ", expected " + hex32(magic) + " for " +
                    kind + hint);
  }
  if (b.size() < header_bytes)
    throw DataError(path + ": truncated header: expected " + std::to_string(header_bytes) + " bytes for " +
                    kind + ", found " + std::to_string(b.size()));
}

/// Checks that the body after the header is exactly `need` bytes long.
void check_idx_body(const Bytes& b, const std::string& path, std::uint64_t need, const std::string& what,
                    bool gz) {
  const std::string counts = "expected " + std::to_string(need) + " bytes (" + what +
                             " and the header), found " + std::to_string(b.size()) +
                             (gz ? " after gunzip" : "");
  if (b.size() < need) throw DataError(path + ": truncated: " + counts);
  if (b.size() > need) throw DataError(path + ": extra bytes after the data: " + counts);
}

}  // namespace

// ---- Dataset ------------------------------------------------------------------

void Dataset::truncate(long n) {
  if (n <= 0 || n >= size()) return;
  labels.resize(static_cast<std::size_t>(n));
  images.resize(static_cast<std::size_t>(n * shape.size()));
}

Dataset Dataset::empty_like() const {
  return Dataset{name, source, shape, classes, class_names, /*images=*/{}, /*labels=*/{}};
}

std::vector<std::string> numbered_names(int classes, const std::string& prefix) {
  std::vector<std::string> names;
  for (int k = 0; k < classes; ++k) names.push_back(prefix + std::to_string(k));
  return names;
}

// ---- IDX (MNIST, Fashion-MNIST) ---------------------------------------------

Dataset load_idx(const std::string& images_path, const std::string& labels_path, const std::string& name) {
  return parse_idx(read_file_bytes(images_path), images_path, read_file_bytes(labels_path), labels_path, name);
}

Dataset parse_idx(const std::vector<unsigned char>& images_bytes, const std::string& images_path,
                  const std::vector<unsigned char>& labels_bytes, const std::string& labels_path,
                  const std::string& name) {
  bool images_gz = false, labels_gz = false;
  Bytes img_storage, lab_storage;
  const Bytes& img = unzipped(images_bytes, images_path, &img_storage, &images_gz);
  check_idx_header(img, images_path, "image", kIdxImagesMagic, 16, images_gz);
  const std::uint32_t n = be32(img.data() + 4), rows = be32(img.data() + 8), cols = be32(img.data() + 12);
  if (rows == 0 || cols == 0 || rows > 65535 || cols > 65535)
    throw DataError(images_path + ": image size " + std::to_string(rows) + "x" + std::to_string(cols) +
                    " in the header is not a plausible image size");
  const std::uint64_t pixels = std::uint64_t{rows} * cols;
  check_idx_body(img, images_path, 16 + std::uint64_t{n} * pixels,
                 std::to_string(n) + " images of " + std::to_string(rows) + "x" + std::to_string(cols),
                 images_gz);

  const Bytes& lab = unzipped(labels_bytes, labels_path, &lab_storage, &labels_gz);
  check_idx_header(lab, labels_path, "label", kIdxLabelsMagic, 8, labels_gz);
  const std::uint32_t n_labels = be32(lab.data() + 4);
  check_idx_body(lab, labels_path, 8 + std::uint64_t{n_labels}, std::to_string(n_labels) + " labels",
                 labels_gz);
  if (n_labels != n)
    throw DataError(images_path + " holds " + std::to_string(n) + " images but " + labels_path + " holds " +
                    std::to_string(n_labels) + " labels");
  if (n > static_cast<std::uint32_t>(std::numeric_limits<int>::max()))
    throw DataError(images_path + ": " + std::to_string(n) + " images are more than this loader handles");

  Dataset d;
  d.name = name;
  d.source = folder_of(images_path);
  d.shape = Shape3{1, static_cast<int>(rows), static_cast<int>(cols)};
  d.classes = 10;
  if (name == "fashion-mnist")
    d.class_names = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                     "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  else
    d.class_names = numbered_names(10, "");

  d.labels.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    const int y = lab[8 + i];
    if (y >= d.classes)
      throw DataError(labels_path + ": label " + std::to_string(y) + " at index " + std::to_string(i) +
                      " is out of range (expected 0..9)");
    d.labels[i] = y;
  }
  const float* unit = byte_to_unit();
  d.images.resize(static_cast<std::size_t>(std::uint64_t{n} * pixels));
  const unsigned char* src = img.data() + 16;
  for (std::size_t i = 0; i < d.images.size(); ++i) d.images[i] = unit[src[i]];
  return d;
}

// ---- CIFAR-10 binary ----------------------------------------------------------

namespace {

/// An empty CIFAR-10 set whose source is `folder`.
Dataset empty_cifar10(const std::string& folder) {
  Dataset d;
  d.name = "cifar10";
  d.source = folder;
  d.shape = Shape3{3, 32, 32};
  d.classes = 10;
  d.class_names = {"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"};
  return d;
}

/// Appends the records of one batch file's bytes to `d`.
void append_cifar10(const Bytes& b, const std::string& path, Dataset& d) {
  // One record: the label byte, then the 32x32 red plane, green plane and blue
  // plane, each row-major: already the C, H, W order the layers use.
  constexpr std::size_t kPixels = 3 * 32 * 32;
  constexpr std::size_t kRecord = 1 + kPixels;
  if (b.empty() || b.size() % kRecord != 0)
    throw DataError(path + ": " + std::to_string(b.size()) +
                    " bytes is not a whole number of CIFAR-10 records (3073 bytes each: 1 label byte "
                    "and 3072 pixel bytes)");
  const float* unit = byte_to_unit();
  const std::size_t records = b.size() / kRecord;
  for (std::size_t r = 0; r < records; ++r) {
    const unsigned char* rec = b.data() + r * kRecord;
    if (rec[0] > 9)
      throw DataError(path + ": record " + std::to_string(r) + " has label " + std::to_string(rec[0]) +
                      ", expected 0..9 (is this the binary version of CIFAR-10, not CIFAR-100?)");
    d.labels.push_back(rec[0]);
    const std::size_t at = d.images.size();
    d.images.resize(at + kPixels);
    for (std::size_t i = 0; i < kPixels; ++i) d.images[at + i] = unit[rec[1 + i]];
  }
}

}  // namespace

Dataset load_cifar10(const std::vector<std::string>& paths) {
  if (paths.empty()) throw DataError("load_cifar10: no files given");
  Dataset d = empty_cifar10(folder_of(paths.front()));
  for (const std::string& path : paths) append_cifar10(read_file_bytes(path), path, d);
  return d;
}

Dataset parse_cifar10(const std::vector<unsigned char>& bytes, const std::string& path) {
  Dataset d = empty_cifar10(folder_of(path));
  append_cifar10(bytes, path, d);
  return d;
}

// ---- CSV ----------------------------------------------------------------------

namespace {

std::string trim(const std::string& s) {
  const char* ws = " \t\r";
  const auto b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

std::vector<std::string> split_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::size_t start = 0;
  for (;;) {
    const auto comma = line.find(',', start);
    cells.push_back(trim(line.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) return cells;
    start = comma + 1;
  }
}

/// A whole cell as a finite number; false for text, blanks, "nan" and "inf".
bool parse_number(const std::string& cell, double* value) {
  if (cell.empty()) return false;
  errno = 0;
  char* end = nullptr;
  *value = std::strtod(cell.c_str(), &end);
  return end == cell.c_str() + cell.size() && errno != ERANGE && std::isfinite(*value);
}

}  // namespace

Dataset load_csv(const std::string& path, std::vector<float>* column_min, std::vector<float>* column_max) {
  const Bytes bytes = read_file_bytes(path);
  return parse_csv(std::string(bytes.begin(), bytes.end()), path, column_min, column_max);
}

Dataset parse_csv(const std::string& text, const std::string& path, std::vector<float>* column_min,
                  std::vector<float>* column_max) {

  std::size_t width = 0;  // cells per line, set by the first non-blank line
  int width_line = 0;     // ... and which line that was, for the messages
  bool seen_first = false;
  std::vector<double> values;  // row-major features, unscaled
  std::vector<int> labels;

  int line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const auto nl = text.find('\n', pos);
    const std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? text.size() : nl + 1;
    ++line_no;
    if (trim(line).empty()) continue;  // blank lines (a trailing one is common) carry nothing

    const std::vector<std::string> cells = split_cells(line);
    std::vector<double> row(cells.size());
    std::size_t bad = cells.size();  // first non-numeric cell, if any
    for (std::size_t j = 0; j < cells.size() && bad == cells.size(); ++j)
      if (!parse_number(cells[j], &row[j])) bad = j;

    if (!seen_first) {
      seen_first = true;
      width = cells.size();
      width_line = line_no;
      if (width < 2)
        throw DataError(path + ": line " + std::to_string(line_no) +
                        " has 1 cell; each line needs at least one feature and the class label");
      if (bad != cells.size()) continue;  // a header line: column names, skipped
    }
    if (cells.size() != width)
      throw DataError(path + ": line " + std::to_string(line_no) + " has " + std::to_string(cells.size()) +
                      " cells, expected " + std::to_string(width) + " (as on line " +
                      std::to_string(width_line) + ")");
    if (bad != cells.size())
      throw DataError(path + ": line " + std::to_string(line_no) + ", column " + std::to_string(bad + 1) +
                      ": '" + cells[bad] + "' is not a number");
    // Features become floats: a larger number would turn into Inf and then NaN
    // when scaled (found by fuzzing, fuzz/regressions/csv).
    for (std::size_t j = 0; j + 1 < row.size(); ++j)
      if (std::fabs(row[j]) > std::numeric_limits<float>::max())
        throw DataError(path + ": line " + std::to_string(line_no) + ", column " + std::to_string(j + 1) + ": '" +
                        cells[j] + "' is outside the range of a float (about -3.4e38 to 3.4e38)");
    const double y = row.back();
    if (y < 0)
      throw DataError(path + ": line " + std::to_string(line_no) + ": label " + cells.back() +
                      " is negative (labels are class numbers 0, 1, 2, ...)");
    if (y != std::floor(y) || y > 1e6)
      throw DataError(path + ": line " + std::to_string(line_no) + ": label " + cells.back() +
                      " is not a class number (a whole number from 0 to 1000000)");
    labels.push_back(static_cast<int>(y));
    values.insert(values.end(), row.begin(), row.end() - 1);
  }
  if (!seen_first)
    throw DataError(path +
                    ": file is empty (expected one example per line: the features, then the class label)");
  if (labels.empty()) throw DataError(path + ": has a header line but no examples");

  const std::size_t features = width - 1;
  const std::size_t n = labels.size();
  const bool given = column_min && column_max && !column_min->empty() && !column_max->empty();
  std::vector<float> lo, hi;
  if (given) {
    lo = *column_min;
    hi = *column_max;
    if (lo.size() != features || hi.size() != features)
      throw DataError(path + ": has " + std::to_string(features) +
                      " feature columns, but the scaling was taken from a file with " +
                      std::to_string(lo.size()));
  } else {
    lo.assign(features, std::numeric_limits<float>::max());
    hi.assign(features, std::numeric_limits<float>::lowest());
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < features; ++j) {
        const auto v = static_cast<float>(values[i * features + j]);
        lo[j] = std::min(lo[j], v);
        hi[j] = std::max(hi[j], v);
      }
    if (column_min) *column_min = lo;
    if (column_max) *column_max = hi;
  }

  Dataset d;
  d.name = "csv";
  d.source = folder_of(path);
  d.shape = Shape3{static_cast<int>(features), 1, 1};
  d.labels = labels;
  d.classes = *std::max_element(labels.begin(), labels.end()) + 1;
  d.class_names = numbered_names(d.classes, "");
  d.images.resize(n * features);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < features; ++j) {
      const double range = static_cast<double>(hi[j]) - lo[j];
      // A constant column carries no information: 0 rather than a division by zero.
      const double v = range > 0 ? (values[i * features + j] - lo[j]) / range : 0.0;
      // The test set is scaled with the training set's range and may fall
      // outside it; clamping keeps every value in [0, 1] as Dataset promises.
      d.images[i * features + j] = static_cast<float>(std::clamp(v, 0.0, 1.0));
    }
  return d;
}

}  // namespace course
