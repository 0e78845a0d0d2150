#include "common/model/model_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <sstream>

#include "common/core/byte_reader.hpp"
#include "common/core/little_endian.hpp"

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#define COURSE_HAVE_FSYNC 1
#endif

namespace course {

namespace {

constexpr std::size_t kMagicSize = 8;
constexpr std::size_t kChecksumSize = 8;

// ---- writing: every integer byte by byte, least significant first
// (put_u32 and put_u64, little_endian.hpp).

void put_string(std::string& out, const std::string& s) {
  put_u32(out, static_cast<std::uint32_t>(s.size()));
  out += s;
}

void put_f32(std::string& out, float f) {
  static_assert(sizeof(float) == 4, "model files store IEEE 754 single precision");
  std::uint32_t bits = 0;
  std::memcpy(&bits, &f, 4);
  put_u32(out, bits);
}

// ---- reading: a ByteReader (byte_reader.hpp) over the file's bytes, which never reads past the
// end; every read names the field, so a cut file says where it was cut. A string is its uint32
// length, then its characters; a float its IEEE 754 bits as a uint32.
using Reader = ByteReader<ModelFileError>;

std::string read_string(Reader& r, const std::string& field) {
  const std::uint32_t n = r.number<std::uint32_t>("the length of " + field);
  return r.take(n, field);
}

void read_floats(Reader& r, float* out, std::size_t n, const std::string& field) {
  r.need(n * 4, field);  // all of them there, or the message names the whole field
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t bits = r.number<std::uint32_t>(field);
    std::memcpy(&out[i], &bits, 4);
  }
}

std::string error_text(int err) { return std::strerror(err); }

// "fc256,relu,fc10" stays as it is when it does not parse, so a message can still show it.
std::string canonical_spec(const std::string& spec) {
  try {
    return parse_arch(spec).spec();
  } catch (const std::invalid_argument&) {
    return spec;
  }
}

}  // namespace

std::uint64_t fnv1a64(const void* data, std::size_t n, std::uint64_t hash) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ull;  // the FNV 64-bit prime
  }
  return hash;
}

std::string encode_model(const ModelFile& model) {
  std::string out(kModelMagic, kMagicSize);
  put_u32(out, kModelFormatVersion);
  put_string(out, model.arch);
  put_u32(out, static_cast<std::uint32_t>(model.input.c));
  put_u32(out, static_cast<std::uint32_t>(model.input.h));
  put_u32(out, static_cast<std::uint32_t>(model.input.w));
  put_u32(out, static_cast<std::uint32_t>(model.classes));
  put_string(out, model.stage);
  put_u32(out, static_cast<std::uint32_t>(model.tensors.size()));
  for (const auto& t : model.tensors) {
    const auto& shape = t.tensor.shape;
    if (shape.size() > kMaxTensorRank)
      throw std::invalid_argument("tensor '" + t.name + "' has rank " + std::to_string(shape.size()) +
                                  "; model files hold at most rank " + std::to_string(kMaxTensorRank));
    for (int d : shape)
      if (d < 1) throw std::invalid_argument("tensor '" + t.name + "' has shape " + t.tensor.shape_str() +
                                             "; every dimension must be at least 1");
    if (Tensor::count(shape) != t.tensor.data.size())
      throw std::invalid_argument("tensor '" + t.name + "' has shape " + t.tensor.shape_str() + " but " +
                                  std::to_string(t.tensor.data.size()) + " values");
    put_string(out, t.name);
    put_u32(out, static_cast<std::uint32_t>(shape.size()));
    for (int d : shape) put_u32(out, static_cast<std::uint32_t>(d));
    out.reserve(out.size() + 4 * t.tensor.data.size() + kChecksumSize);
    for (float v : t.tensor.data) put_f32(out, v);
  }
  put_u64(out, fnv1a64(out.data(), out.size()));
  return out;
}

void write_file_atomically(const std::string& path, const std::string& bytes, std::size_t fail_after_bytes) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw std::runtime_error("cannot write '" + path + "': cannot create '" + tmp + "': " + error_text(errno));

  // Any failure from here on: close, remove the partial temporary file, report.
  auto fail = [&](const std::string& why) {
    if (f) std::fclose(f);
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot write '" + path + "': " + why + " (the previous file, if any, is unchanged)");
  };

  const bool simulate = fail_after_bytes != kNeverFail;
  const std::size_t to_write = simulate ? std::min(fail_after_bytes, bytes.size()) : bytes.size();
  constexpr std::size_t kChunk = 1 << 16;
  for (std::size_t done = 0; done < to_write;) {
    const std::size_t n = std::min(kChunk, to_write - done);
    if (std::fwrite(bytes.data() + done, 1, n, f) != n) fail("writing '" + tmp + "' failed: " + error_text(errno));
    done += n;
  }
  if (simulate) fail("simulated failure after " + std::to_string(to_write) + " bytes (test hook)");

  if (std::fflush(f) != 0) fail("flushing '" + tmp + "' failed: " + error_text(errno));
#ifdef COURSE_HAVE_FSYNC
  // The data must be on disk before the rename makes it the real file, or a
  // power cut right after the rename could leave an empty file behind.
  if (fsync(fileno(f)) != 0) fail("syncing '" + tmp + "' to disk failed: " + error_text(errno));
#endif
  const int closed = std::fclose(f);
  f = nullptr;
  if (closed != 0) fail("closing '" + tmp + "' failed: " + error_text(errno));
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    fail("renaming '" + tmp + "' to it failed: " + error_text(errno));
}

void save_model(const std::string& path, const ModelFile& model, std::size_t fail_after_bytes) {
  std::string bytes;
  try {
    bytes = encode_model(model);
  } catch (const std::invalid_argument& e) {
    throw ModelFileError("cannot save model file '" + path + "': " + e.what());
  }
  try {
    write_file_atomically(path, bytes, fail_after_bytes);
  } catch (const std::runtime_error& e) {
    throw ModelFileError(std::string("model file: ") + e.what());
  }
}

ModelFile load_model(const std::string& path) {
  return decode_model(
      read_whole_file<ModelFileError>(path, "model file '" + path + "'", " (save one first with --save FILE)"), path);
}

ModelFile decode_model(const std::string& bytes, const std::string& path) {
  Reader r(bytes, "model file '" + path + "'", "; save the model again");
  if (bytes.empty()) r.fail("is empty (0 bytes): not a model file; was an earlier save interrupted?");
  if (bytes.size() < kMagicSize || bytes.compare(0, kMagicSize, kModelMagic, kMagicSize) != 0)
    r.fail("is not a model file: it does not start with " + std::string(kModelMagic) +
           (bytes.size() < kMagicSize ? " (it is only " + std::to_string(bytes.size()) + " bytes long)" : ""));
  r.skip(kMagicSize, "the magic");

  const std::uint32_t version = r.number<std::uint32_t>("the format version");
  if (version != kModelFormatVersion)
    r.fail("was written with format version " + std::to_string(version) + ", this build reads version " +
           std::to_string(kModelFormatVersion) +
           (version > kModelFormatVersion ? " (it comes from a newer checkout of the course)"
                                          : " (retrain and save it again)"));

  ModelFile m;
  m.arch = read_string(r, "the architecture spec");
  const std::uint32_t c = r.number<std::uint32_t>("the input channels"), h = r.number<std::uint32_t>("the input height"), w = r.number<std::uint32_t>("the input width");
  // 2^20 per side is far beyond any data set here; a larger value is a damaged field.
  constexpr std::uint32_t kMaxSide = 1u << 20;
  if (c < 1 || h < 1 || w < 1 || c > kMaxSide || h > kMaxSide || w > kMaxSide)
    r.fail("is damaged: its input shape " + std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(w) +
           " has a zero or absurdly large dimension");
  m.input = Shape3{static_cast<int>(c), static_cast<int>(h), static_cast<int>(w)};
  const std::uint32_t classes = r.number<std::uint32_t>("the number of classes");
  if (classes < 1 || classes > kMaxSide)
    r.fail("is damaged: it claims " + std::to_string(classes) + " classes");
  m.classes = static_cast<int>(classes);
  m.stage = read_string(r, "the stage name");

  const std::uint32_t count = r.number<std::uint32_t>("the number of tensors");
  // A tensor takes at least 12 bytes (name length, rank, one value): that
  // bounds what is reserved, whatever a damaged count says. The loop itself
  // needs no bound, since every tensor read consumes bytes of the file.
  m.tensors.reserve(std::min<std::size_t>(count, r.remaining() / 12));
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::string number = "tensor " + std::to_string(i + 1) + " of " + std::to_string(count);
    NamedTensor t;
    t.name = read_string(r, "the name of " + number);
    const std::string label = number + " '" + t.name + "'";
    const std::uint32_t rank = r.number<std::uint32_t>("the rank of " + label);
    if (rank > kMaxTensorRank)
      r.fail("is damaged: " + label + " has rank " + std::to_string(rank) + " (at most " +
             std::to_string(kMaxTensorRank) + ")");
    std::vector<int> shape;
    std::size_t elements = 1;  // saturates instead of overflowing: it is only compared below
    for (std::uint32_t d = 0; d < rank; ++d) {
      const std::uint32_t v = r.number<std::uint32_t>("dimension " + std::to_string(d + 1) + " of " + label);
      if (v < 1 || v > static_cast<std::uint32_t>(std::numeric_limits<int>::max()))
        r.fail("is damaged: dimension " + std::to_string(d + 1) + " of " + label + " is " + std::to_string(v));
      shape.push_back(static_cast<int>(v));
      elements = elements > std::numeric_limits<std::size_t>::max() / v ? std::numeric_limits<std::size_t>::max()
                                                                         : elements * v;
    }
    // Guard the allocation: the values must fit in what is left of the file.
    if (elements > r.remaining() / 4) {
      const bool huge = elements > std::numeric_limits<std::size_t>::max() / 4;
      r.fail("is truncated or damaged: the data of " + label + ", shape " + Tensor::shape_to_string(shape) +
             ", needs " + (huge ? std::string("more than 2^64") : std::to_string(elements * 4)) +
             " bytes but only " + std::to_string(r.remaining()) + " are left");
    }
    t.tensor = Tensor(shape);
    read_floats(r, t.tensor.ptr(), elements, "the data of " + label);
    m.tensors.push_back(std::move(t));
  }

  const std::size_t checked = r.position();
  const std::uint64_t stored = r.number<std::uint64_t>("the checksum");
  if (r.remaining() != 0)
    r.fail("is damaged: " + std::to_string(r.remaining()) + " unexpected bytes follow the checksum");
  const std::uint64_t computed = fnv1a64(bytes.data(), checked);
  if (computed != stored) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "stored %016llx, computed %016llx", static_cast<unsigned long long>(stored),
                  static_cast<unsigned long long>(computed));
    r.fail("is damaged: checksum mismatch (" + std::string(buf) +
           "); the file changed after it was written");
  }
  return m;
}

void check_model_matches(const ModelFile& model, const std::string& arch, Shape3 input, int classes,
                         const std::string& path) {
  const std::string saved = canonical_spec(model.arch), wanted = canonical_spec(arch);
  std::vector<std::string> diffs;
  if (saved != wanted) diffs.push_back("architecture");
  if (!(model.input == input)) diffs.push_back("input shape");
  if (model.classes != classes) diffs.push_back("number of classes");
  if (diffs.empty()) return;
  std::string what;
  for (std::size_t i = 0; i < diffs.size(); ++i) what += (i ? ", " : "") + diffs[i];
  throw ModelFileError(path + " holds architecture '" + saved + "' for input " + model.input.str() + " with " +
                       std::to_string(model.classes) + " classes, but this run builds '" + wanted +
                       "' for input " + input.str() + " with " + std::to_string(classes) + " classes (" + what +
                       " differ" + (diffs.size() == 1 ? "s" : "") +
                       "); pass the --model/--arch (with its --activation, --leaky-slope and --output) and --dataset the model "
                       "was trained with");
}

}  // namespace course
