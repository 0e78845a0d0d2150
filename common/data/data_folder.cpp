/// @file data_folder.cpp
/// @brief --dataset folder: PNG and JPEG pictures in one subfolder per class,
/// decoded with stb_image (Debian: libstb-dev), resized bilinearly.
#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "common/data/data.hpp"
#include "common/data/data_transform.hpp"

#ifdef COURSE_HAVE_STB
// The decoder is compiled here, private to this file (STB_IMAGE_STATIC), for
// the two formats the loader reads and from memory only: the less of
// stb_image is built, the less of it a bad file can reach.
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
#define STBI_NO_HDR
// stb_image 2.27 shifts by 32 or more when the coded data of a corrupt JPEG runs out of bits
// (undefined behaviour, on x86 garbage pixels of a picture that is garbage anyway; 2.28 stops
// decoding there). The image fuzz target found it on 2026-11-28 and the data's bits cannot be
// checked before decoding, so under clang's UndefinedBehaviorSanitizer (the fuzz build) stb_image's
// own shifts are not checked; AddressSanitizer still checks every read and write it makes.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((no_sanitize("shift"))), apply_to = function)
#endif
#include <stb/stb_image.h>
#if defined(__clang__)
#pragma clang attribute pop
#endif
#endif

namespace fs = std::filesystem;

namespace course {

namespace {

using Bytes = std::vector<unsigned char>;

#ifdef COURSE_HAVE_STB  // what decode_image() checks before stb_image sees the bytes

bool is_png(const Bytes& b) {
  static const unsigned char kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  return b.size() >= 8 && std::equal(kSignature, kSignature + 8, b.begin());
}

bool is_jpeg(const Bytes& b) { return b.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF; }

/// The first bytes of a file that is not a picture, as a person can read them:
/// the text when it is text, else hexadecimal.
std::string first_bytes(const Bytes& b) {
  const std::size_t n = std::min<std::size_t>(b.size(), 16);
  bool text = true;
  for (std::size_t i = 0; i < n; ++i) text = text && (std::isprint(b[i]) || b[i] == '\n' || b[i] == '\t' || b[i] == '\r');
  std::string s;
  if (text) {
    for (std::size_t i = 0; i < n; ++i) s += std::isprint(b[i]) ? static_cast<char>(b[i]) : ' ';
    return "the text \"" + s + (b.size() > n ? "...\"" : "\"");
  }
  char buf[4];
  for (std::size_t i = 0; i < std::min<std::size_t>(n, 8); ++i) {
    std::snprintf(buf, sizeof buf, "%02x", b[i]);
    s += (i ? " " : "") + std::string(buf);
  }
  return "the bytes " + s;
}

/// The CRC-32 of PNG chunks (ISO 3309, the polynomial zlib and gzip use).
std::uint32_t crc32_of(const unsigned char* p, std::size_t n) {
  static const auto table = [] {
    std::vector<std::uint32_t> t(256);
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::uint32_t be32(const unsigned char* p) {
  return std::uint32_t{p[0]} << 24 | std::uint32_t{p[1]} << 16 | std::uint32_t{p[2]} << 8 | p[3];
}

/// A chunk type as text ("IDAT"), or in hexadecimal when it is not letters.
std::string chunk_name(const unsigned char* t) {
  bool letters = true;
  for (int i = 0; i < 4; ++i) letters = letters && std::isalpha(t[i]);
  if (letters) return std::string(reinterpret_cast<const char*>(t), 4);
  char buf[16];
  std::snprintf(buf, sizeof buf, "%02x%02x%02x%02x", t[0], t[1], t[2], t[3]);
  return buf;
}

/// Walks a PNG file's chunks up to IEND, checking that each is whole and that
/// its CRC matches: stb_image checks neither, so a PNG cut after its image
/// data loads without a word (fuzz/regressions/image/png-cut-inside-the-crc-of-iend),
/// and a damaged byte is caught only when it breaks the compressed stream.
/// "" when the file is sound, else what is wrong with it.
std::string png_fault(const Bytes& b) {
  std::size_t at = 8;  // after the signature
  for (;;) {
    if (at + 8 > b.size())
      return "truncated: it ends at byte " + std::to_string(b.size()) +
             " before its IEND chunk (the file was cut short?)";
    const std::uint32_t length = be32(&b[at]);
    const std::string name = chunk_name(&b[at + 4]);
    if (length > 0x7FFFFFFFu)
      return "corrupt: the chunk at byte " + std::to_string(at) + " claims " + std::to_string(length) + " bytes";
    if (at + 12 + length > b.size())
      return "truncated: its " + name + " chunk at byte " + std::to_string(at) + " needs " +
             std::to_string(12 + std::uint64_t{length}) + " bytes, and the file ends " +
             std::to_string(b.size() - at) + " bytes after its start (the file was cut short?)";
    if (crc32_of(&b[at + 4], 4 + std::size_t{length}) != be32(&b[at + 8 + length]))
      return "corrupt: its " + name + " chunk at byte " + std::to_string(at) + " fails its CRC check";
    if (name == "IEND") return "";
    at += 12 + std::size_t{length};
  }
}

/// The size in a sound PNG's header (png_fault() found it whole): its first
/// chunk must be IHDR, width then height. "" or what is wrong.
std::string png_size(const Bytes& b, std::uint32_t* w, std::uint32_t* h) {
  if (chunk_name(&b[12]) != "IHDR" || be32(&b[8]) < 8)
    return "corrupt: its first chunk is " + chunk_name(&b[12]) + ", not the IHDR header";
  *w = be32(&b[16]);
  *h = be32(&b[20]);
  return "";
}

/// Walks a JPEG file's marker segments from start to end-of-image, the way a
/// decoder reads them, and returns "" and the size of its frame header (the
/// first SOFn), or what is wrong. Checked here, before stb_image sees the
/// bytes:
/// - every segment is whole, and the file reaches its end-of-image marker
///   (a file cut short is named as such, not with stb_image's "expected marker");
/// - a frame header comes before the first scan, and there is a scan;
/// - every Huffman table (DHT) defines at most 256 codes, within its segment.
///   stb_image 2.27 (Debian 12's libstb-dev) does not check this and writes
///   past its tables when the counts add up to more (found by the image fuzz
///   target on its first run; fuzz/regressions/image/jpeg-huffman-table-of-300-codes;
///   stb_image 2.28 checks it too);
/// - every Huffman table a scan decodes with was defined by a DHT segment before
///   it. stb_image 2.27 does not zero its tables, so a scan that names an
///   undefined one decodes with whatever its memory held and reads past its
///   arrays (found by the image fuzz target in a CI run of 2026-11-28;
///   fuzz/regressions/image/jpeg-scan-uses-an-undefined-huffman-table).
/// The compressed data after each scan header is skipped to the next marker:
/// there a byte FF is always followed by 00 (a stuffed FF) or a restart
/// marker, so no segment is seen by mistake, and a thumbnail inside an
/// APPn segment is skipped with its segment.
std::string jpeg_check(const Bytes& b, std::uint32_t* w, std::uint32_t* h) {
  const std::string cut = "truncated: it ends at byte " + std::to_string(b.size()) +
                          " before its end-of-image marker (the file was cut short?)";
  bool frame = false, scan = false;
  bool defined[2][4] = {};  // [class: 0 DC, 1 AC][table id]: set by a DHT segment
  std::size_t at = 2;       // after SOI
  for (;;) {
    while (at < b.size() && b[at] != 0xFF) ++at;          // stray bytes between segments
    while (at + 1 < b.size() && b[at + 1] == 0xFF) ++at;  // fill bytes
    if (at + 2 > b.size()) return cut;
    const unsigned char m = b[at + 1];
    const std::string where = " at byte " + std::to_string(at);
    if (m == 0xD9) {
      if (!scan) return "truncated or corrupt: it has no image data (no start-of-scan marker)";
      return "";
    }
    if (m == 0x01 || (m >= 0xD0 && m <= 0xD7)) {  // markers without a length
      at += 2;
      continue;
    }
    if (m == 0xD8) return "corrupt: a second start-of-image marker" + where;
    if (at + 4 > b.size()) return cut;
    const std::size_t length = std::size_t{b[at + 2]} << 8 | b[at + 3];
    if (length < 2) return "corrupt: the marker segment" + where + " has a length below 2";
    if (at + 2 + length > b.size()) return cut;
    const unsigned char* seg = &b[at + 4];  // the segment after its length
    const std::size_t n = length - 2;
    if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC && !frame) {
      if (n < 6) return "corrupt: its frame header" + where + " is too short";
      *h = std::uint32_t{seg[1]} << 8 | seg[2];
      *w = std::uint32_t{seg[3]} << 8 | seg[4];
      if (*h == 0) return "not supported: its frame header gives no height (a DNL marker gives it later)";
      frame = true;
    } else if (m == 0xC4) {
      for (std::size_t t = 0; t < n;) {
        if (t + 17 > n) return "corrupt: the Huffman table segment" + where + " ends inside a table";
        std::size_t codes = 0;
        for (int i = 1; i <= 16; ++i) codes += seg[t + static_cast<std::size_t>(i)];
        if (codes > 256)
          return "corrupt: a Huffman table" + where + " defines " + std::to_string(codes) + " codes (at most 256)";
        if (t + 17 + codes > n) return "corrupt: the Huffman table segment" + where + " ends inside a table";
        const int table_class = seg[t] >> 4, id = seg[t] & 15;
        if (table_class > 1 || id > 3)
          return "corrupt: a Huffman table" + where + " has class " + std::to_string(table_class) + " and id " +
                 std::to_string(id) + " (class 0 or 1, id 0 to 3)";
        defined[table_class][id] = true;
        t += 17 + codes;
      }
    } else if (m == 0xDA) {
      if (!frame) return "corrupt: a scan" + where + " before any frame header";
      if (n < 1 || n < 4 + 2 * std::size_t{seg[0]}) return "corrupt: the scan header" + where + " is too short";
      const std::size_t components = seg[0];
      const unsigned first = seg[1 + 2 * components], last = seg[2 + 2 * components];  // spectral range
      const bool dc_refinement = first == 0 && (seg[3 + 2 * components] >> 4) != 0;
      for (std::size_t c = 0; c < components; ++c) {
        const int dc = seg[2 + 2 * c] >> 4, ac = seg[2 + 2 * c] & 15;
        // A scan from coefficient 0 decodes DC values (a DC refinement reads raw bits); one up to a later
        // coefficient decodes AC values.
        if (first == 0 && !dc_refinement && (dc > 3 || !defined[0][dc]))
          return "corrupt: the scan" + where + " decodes with DC Huffman table " + std::to_string(dc) +
                 ", which no Huffman table segment before it defines";
        if (last > 0 && (ac > 3 || !defined[1][ac]))
          return "corrupt: the scan" + where + " decodes with AC Huffman table " + std::to_string(ac) +
                 ", which no Huffman table segment before it defines";
      }
      scan = true;
      // The compressed data: up to the next marker other than a stuffed FF or a restart.
      at += 2 + length;
      while (at + 1 < b.size() && !(b[at] == 0xFF && b[at + 1] != 0x00 && b[at + 1] != 0xFF &&
                                    !(b[at + 1] >= 0xD0 && b[at + 1] <= 0xD7)))
        ++at;
      if (at + 1 >= b.size()) return "truncated: its image data is not followed by the end-of-image marker (the file was cut short?)";
      continue;
    }
    at += 2 + length;
  }
}

#endif  // COURSE_HAVE_STB

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

bool is_picture_name(const fs::path& p) {
  const std::string ext = lower(p.extension().string());
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

bool hidden(const fs::path& p) {
  const std::string name = p.filename().string();
  return !name.empty() && name[0] == '.';
}

/// Entries of a folder that are neither pictures nor class folders.
struct Skipped {
  long count = 0;
  std::string first;
  void add(const fs::path& p) {
    if (count++ == 0) first = p.string();
  }
};

/// The subfolders of `dir` (hidden ones left out), sorted by name; other entries go to `skipped`.
std::vector<std::string> class_folders(const fs::path& dir, Skipped* skipped) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (hidden(it->path())) continue;
    if (it->is_directory(ec))
      names.push_back(it->path().filename().string());
    else
      skipped->add(it->path());
  }
  if (ec) throw DataError(dir.string() + ": cannot list the folder (" + ec.message() + ")");
  std::sort(names.begin(), names.end());
  return names;
}

/// The pictures in `dir`, sorted by name; other entries go to `skipped`.
std::vector<fs::path> pictures_in(const fs::path& dir, Skipped* skipped) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (hidden(it->path())) continue;
    if (!it->is_directory(ec) && is_picture_name(it->path()))
      files.push_back(it->path());
    else
      skipped->add(it->path());
  }
  if (ec) throw DataError(dir.string() + ": cannot list the folder (" + ec.message() + ")");
  std::sort(files.begin(), files.end());
  return files;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string s;
  for (std::size_t i = 0; i < parts.size(); ++i) s += (i ? sep : "") + parts[i];
  return s;
}

/// The class names for the note: all of them when few, else the first ones.
std::string class_list(const std::vector<std::string>& names) {
  if (names.size() <= 6) return join(names, ", ");
  return join(std::vector<std::string>(names.begin(), names.begin() + 5), ", ") + ", ... " + names.back();
}

/// One set's pictures, decoded and resized, before the channels are settled.
struct Loaded {
  std::vector<Image> images;
  std::vector<int> labels;
};

}  // namespace

#ifdef COURSE_HAVE_STB
namespace {
/// stb_image's reason for its last failure on this thread.
std::string stb_reason() {
  const char* r = stbi_failure_reason();
  return r ? r : "no reason given";
}
}  // namespace
#endif

bool image_decoding_available() {
#ifdef COURSE_HAVE_STB
  return true;
#else
  return false;
#endif
}

Image decode_image(const std::vector<unsigned char>& bytes, const std::string& path, const ImageLimits& limits) {
#ifndef COURSE_HAVE_STB
  (void)bytes;
  (void)limits;
  throw DataError(path + ": this build cannot decode PNG or JPEG pictures: it was built without stb_image "
                         "(apt-get install libstb-dev, then configure and build again)");
#else
  if (bytes.empty()) throw DataError(path + ": file is empty (expected a PNG or JPEG picture)");
  const bool png = is_png(bytes), jpeg = !png && is_jpeg(bytes);
  if (!png && !jpeg)
    throw DataError(path + ": not a PNG or JPEG picture (it starts with " + first_bytes(bytes) + ")");
  const char* format = png ? "PNG" : "JPEG";
  if (bytes.size() > static_cast<std::size_t>(INT_MAX))
    throw DataError(path + ": a " + format + " file of more than 2 GiB is more than this loader reads");
  const int length = static_cast<int>(bytes.size());

  // The structure and the size, checked here (stbi_info_from_memory() would
  // give the size, but its reason for a refusal is always "unknown image type").
  std::uint32_t w32 = 0, h32 = 0;
  std::string fault = png ? png_fault(bytes) : jpeg_check(bytes, &w32, &h32);
  if (fault.empty() && png) fault = png_size(bytes, &w32, &h32);
  if (!fault.empty()) throw DataError(path + ": this " + format + " file is " + fault);
  if (w32 < 1 || h32 < 1 || w32 > static_cast<std::uint32_t>(limits.max_side) ||
      h32 > static_cast<std::uint32_t>(limits.max_side) || std::uint64_t{w32} * h32 > static_cast<std::uint64_t>(limits.max_pixels))
    throw DataError(path + ": a picture of " + std::to_string(w32) + "x" + std::to_string(h32) +
                    " pixels (width x height) is larger than the loader accepts (at most " +
                    std::to_string(limits.max_side) + " on a side and " + std::to_string(limits.max_pixels) +
                    " pixels)");

  int w = 0, h = 0, n = 0;
  std::unique_ptr<unsigned char, void (*)(void*)> pixels(stbi_load_from_memory(bytes.data(), length, &w, &h, &n, 0),
                                                         stbi_image_free);
  if (!pixels)
    throw DataError(path + ": cannot decode this " + format + " file: it is corrupt or truncated (stb_image: " +
                    stb_reason() + ")");
  if (n < 1 || n > 4 || w < 1 || h < 1)
    throw DataError(path + ": stb_image returned " + std::to_string(n) + " channels of " + std::to_string(w) + "x" +
                    std::to_string(h) + " pixels");

  Image image;
  image.channels = n <= 2 ? 1 : 3;  // the alpha channel (n = 2 or 4) is dropped
  image.height = h;
  image.width = w;
  const long plane = static_cast<long>(w) * h;
  image.values.resize(static_cast<std::size_t>(plane * image.channels));
  const unsigned char* p = pixels.get();
  for (int c = 0; c < image.channels; ++c) {
    float* out = image.values.data() + c * plane;
    for (long j = 0; j < plane; ++j) out[j] = static_cast<float>(p[j * n + c]) / 255.0f;
  }
  return image;
#endif
}

DataSplit load_image_folder(const std::string& dir, ImageSize size) {
  if (!image_decoding_available())
    throw DataError("--dataset folder: this build cannot decode PNG or JPEG pictures: it was built without "
                    "stb_image (apt-get install libstb-dev, then configure and build again)");
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw DataError(dir + ": " + (fs::exists(dir, ec) ? "is not a folder" : "the folder does not exist") +
                    " (--dataset folder reads DIR/train/<class>/ and DIR/test/<class>/)");
  const fs::path root(dir), train_dir = root / "train", test_dir = root / "test";
  for (const fs::path& sub : {train_dir, test_dir})
    if (!fs::is_directory(sub, ec))
      throw DataError(sub.string() + ": missing: --dataset folder reads " + (root / "train").string() +
                      "/<class>/ and " + (root / "test").string() +
                      "/<class>/, one subfolder of PNG or JPEG pictures per class");

  Skipped skipped;
  const std::vector<std::string> classes = class_folders(train_dir, &skipped);
  if (classes.empty())
    throw DataError(train_dir.string() + ": holds no class folders (expected one subfolder per class, e.g. " +
                    (train_dir / "cat").string() + "/)");
  if (classes.size() > 1000000)
    throw DataError(train_dir.string() + ": " + std::to_string(classes.size()) + " class folders are more than 1000000");
  const std::vector<std::string> test_classes = class_folders(test_dir, &skipped);
  for (const std::string& c : test_classes)
    if (!std::binary_search(classes.begin(), classes.end(), c))
      throw DataError((test_dir / c).string() + ": a class that " + train_dir.string() +
                      " does not have (the classes are the folders of " + train_dir.string() + ": " +
                      class_list(classes) + ")");
  for (const std::string& c : classes)
    if (!std::binary_search(test_classes.begin(), test_classes.end(), c))
      throw DataError((test_dir / c).string() + ": missing: every class folder of " + train_dir.string() +
                      " needs one in " + test_dir.string() + " (it may be empty)");

  ImageSize target = size;
  long resized = 0, gray_count = 0, colour_count = 0;
  auto load_set = [&](const fs::path& set_dir, bool is_train) {
    Loaded set;
    for (std::size_t k = 0; k < classes.size(); ++k) {
      const fs::path class_dir = set_dir / classes[k];
      const std::vector<fs::path> files = pictures_in(class_dir, &skipped);
      if (files.empty() && is_train)
        throw DataError(class_dir.string() + ": holds no .png, .jpg or .jpeg picture");
      for (const fs::path& file : files) {
        if (set.labels.size() >= static_cast<std::size_t>(INT_MAX))
          throw DataError(set_dir.string() + ": more pictures than this loader handles");
        Image image = decode_image(read_file_bytes(file.string()), file.string());
        if (target.empty()) target = ImageSize{image.height, image.width};
        if (image.height != target.h || image.width != target.w) {
          std::vector<float> out(static_cast<std::size_t>(image.channels) * target.h * target.w);
          const long from = static_cast<long>(image.height) * image.width, to = static_cast<long>(target.h) * target.w;
          for (int c = 0; c < image.channels; ++c)
            resize_bilinear(image.values.data() + c * from, image.height, image.width, out.data() + c * to, target.h,
                            target.w);
          image.values = std::move(out);
          image.height = target.h;
          image.width = target.w;
          ++resized;
        }
        (image.channels == 1 ? gray_count : colour_count) += 1;
        set.images.push_back(std::move(image));
        set.labels.push_back(static_cast<int>(k));
      }
    }
    return set;
  };
  Loaded train = load_set(train_dir, true);
  Loaded test = load_set(test_dir, false);

  const int channels = colour_count > 0 ? 3 : 1;
  const Shape3 shape{channels, target.h, target.w};
  auto to_dataset = [&](Loaded& set, const fs::path& source) {
    Dataset d;
    d.name = "folder";
    d.source = source.string();
    d.shape = shape;
    d.classes = static_cast<int>(classes.size());
    d.class_names = classes;
    d.labels = std::move(set.labels);
    const long plane = static_cast<long>(shape.h) * shape.w;
    d.images.resize(static_cast<std::size_t>(d.labels.size()) * static_cast<std::size_t>(shape.size()));
    for (std::size_t i = 0; i < set.images.size(); ++i) {
      Image& image = set.images[i];
      float* out = d.images.data() + static_cast<long>(i) * shape.size();
      for (int c = 0; c < channels; ++c) {
        const float* in = image.values.data() + (image.channels == 1 ? 0 : c) * plane;  // gray: the plane repeated
        std::copy(in, in + plane, out + c * plane);
      }
      std::vector<float>().swap(image.values);  // freed as it goes
    }
    return d;
  };
  DataSplit split;
  split.train = to_dataset(train, train_dir);
  split.test = to_dataset(test, test_dir);

  split.note = "folder: " + std::to_string(split.train.size()) + " train, " + std::to_string(split.test.size()) +
               " test pictures in " + std::to_string(classes.size()) + " classes (" + class_list(classes) +
               ") from " + dir + ", " + shape.str() + (channels == 3 ? " colour" : " gray");
  if (resized > 0)
    split.note += "; " + std::to_string(resized) + " resized to " + target.str() + " (bilinear" +
                  (size.empty() ? ", the size of the first training picture" : ", --resize") + ")";
  if (channels == 3 && gray_count > 0)
    split.note += "; " + std::to_string(gray_count) + (gray_count == 1 ? " gray picture" : " gray pictures") +
                  " repeated over 3 channels";
  if (skipped.count > 0)
    split.note += "; skipped " + std::to_string(skipped.count) +
                  (skipped.count == 1 ? " entry that is not a .png, .jpg or .jpeg picture or a class folder ("
                                      : " entries that are not .png, .jpg or .jpeg pictures or class folders (the "
                                        "first: ") +
                  skipped.first + ")";
  return split;
}

}  // namespace course
