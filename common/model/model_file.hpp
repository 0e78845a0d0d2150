/// @file model_file.hpp
/// @brief Saved models: a versioned, checksummed binary file written atomically.
///
/// Layout (every integer little-endian, whatever the machine):
///
/// | bytes      | field                                                    |
/// |------------|----------------------------------------------------------|
/// | 8          | magic `NNCMODEL`                                         |
/// | 4          | uint32 format version (kModelFormatVersion)              |
/// | 4 + n      | architecture spec: uint32 length, then its characters     |
/// | 3 x 4      | input shape: uint32 channels, height, width              |
/// | 4          | uint32 number of classes                                 |
/// | 4 + n      | stage that wrote it: uint32 length, then its characters  |
/// | 4          | uint32 number of tensors                                 |
/// | per tensor | name (uint32 length + characters), uint32 rank, rank x uint32 dims, then the float32 values (IEEE 754) |
/// | 8          | uint64 FNV-1a 64 checksum of every byte before it        |
///
/// The format carries the architecture so a model is never loaded into a
/// network of another shape, and a version so a future layout is refused with
/// a message instead of being read as garbage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/model/arch.hpp"
#include "common/core/tensor.hpp"

namespace course {

/// The layout version this build writes and reads.
inline constexpr std::uint32_t kModelFormatVersion = 1;

/// The 8 bytes every model file starts with.
inline constexpr char kModelMagic[] = "NNCMODEL";

/// Largest tensor rank a model file may hold; a larger one means a damaged file.
inline constexpr std::uint32_t kMaxTensorRank = 8;

/// `fail_after_bytes` value meaning "do not simulate a failure".
inline constexpr std::size_t kNeverFail = std::numeric_limits<std::size_t>::max();

/// A model file that cannot be read, written, or used: the message names the
/// file and the problem.
class ModelFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Everything a model file holds.
struct ModelFile {
  std::string arch;                  ///< canonical architecture spec (Arch::spec())
  Shape3 input;                      ///< shape of one example
  int classes = 0;                   ///< number of classes
  std::string stage;                 ///< id of the stage that wrote it ("01_fc_softmax"); information only
  std::vector<NamedTensor> tensors;  ///< parameters in model order (Engine::get_parameters())
};

/// FNV-1a 64-bit hash of `n` bytes, continuing from `hash` (the FNV offset basis by default).
/// Not cryptographic: it catches damaged and cut files, which is its job here.
std::uint64_t fnv1a64(const void* data, std::size_t n, std::uint64_t hash = 0xcbf29ce484222325ull);

/// The bytes of a model file (everything save_model() writes).
/// Throws std::invalid_argument for a tensor whose data does not match its
/// shape, a rank above kMaxTensorRank, or a dimension below 1.
std::string encode_model(const ModelFile& model);

/// Writes `bytes` to `path` so that `path` is always either the old file or
/// the complete new one: the bytes go to `path + ".tmp"` in the same folder,
/// which is flushed to disk, closed and checked, then renamed over `path`
/// (a rename within one file system is atomic). On any failure the temporary
/// file is removed, `path` is untouched, and std::runtime_error names the file.
///
/// `fail_after_bytes` is a test hook: when it is not kNeverFail, writing stops
/// after that many bytes and fails as a full disk would.
void write_file_atomically(const std::string& path, const std::string& bytes,
                           std::size_t fail_after_bytes = kNeverFail);

/// Saves a model to `path` atomically (see write_file_atomically()).
/// Throws ModelFileError naming the file when it cannot be written.
/// `fail_after_bytes` is the test hook of write_file_atomically().
void save_model(const std::string& path, const ModelFile& model, std::size_t fail_after_bytes = kNeverFail);

/// Reads a model file. Throws ModelFileError naming the file and the problem:
/// missing or unreadable, empty, not a model file (bad magic), another format
/// version, truncated (naming the field it ends in), a damaged size field
/// (rank above 8, a zero dimension, more data than the file holds), bytes
/// after the checksum, or a checksum mismatch.
ModelFile load_model(const std::string& path);

/// The parser of load_model() on bytes already in memory (everything
/// encode_model() returns); `path` names them in the messages. Throws
/// ModelFileError like load_model().
ModelFile decode_model(const std::string& bytes, const std::string& path);

/// Checks that a loaded model fits the network this run builds. Throws
/// ModelFileError saying what differs, e.g. "model.bin holds architecture
/// 'fc256,relu,fc128,relu,fc10' for input 1x28x28 with 10 classes, but this
/// run builds 'conv16k3p1,...' for input 1x28x28 with 10 classes".
/// Both specs are compared in canonical form, so "FC10" matches "fc10".
void check_model_matches(const ModelFile& model, const std::string& arch, Shape3 input, int classes,
                         const std::string& path);

}  // namespace course
