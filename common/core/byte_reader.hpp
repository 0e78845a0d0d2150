/// @file byte_reader.hpp
/// @brief How both binary formats (model files, checkpoints) read a file: read_whole_file() fetches
/// its bytes, and a ByteReader walks through them.
///
/// The reader never reads past the end, and every read names its field, so a cut file says where it was
/// cut. `Error` is the format's own exception (ModelFileError, CheckpointError): a reader of a
/// model file and one of a checkpoint fail in their own words, through the same code.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>

#include "common/core/little_endian.hpp"

namespace course {

template <typename Error>
class ByteReader {
 public:
  /// `bytes` is the whole file; `file` names it at the start of every message ("model file
  /// 'm.bin'"); `truncated_advice` ends the message for a cut file ("; save the model again").
  ByteReader(const std::string& bytes, std::string file, std::string truncated_advice = "")
      : bytes_(bytes), file_(std::move(file)), truncated_advice_(std::move(truncated_advice)) {}

  std::size_t position() const { return pos_; }
  std::size_t remaining() const { return bytes_.size() - pos_; }

  void skip(std::size_t n, const std::string& field) {
    need(n, field);
    pos_ += n;
  }

  /// The next sizeof(Unsigned) bytes as an unsigned integer, least significant byte first.
  template <typename Unsigned>
  Unsigned number(const std::string& field) {
    need(sizeof(Unsigned), field);
    const Unsigned v = get_little_endian<Unsigned>(bytes_, pos_);
    pos_ += sizeof(Unsigned);
    return v;
  }

  /// The next n bytes as they are.
  std::string take(std::size_t n, const std::string& field) {
    need(n, field);
    std::string s = bytes_.substr(pos_, n);
    pos_ += n;
    return s;
  }

  /// Throws Error("<file> <problem>"), e.g. "checkpoint 'c.bin' is empty (0 bytes): not a checkpoint".
  [[noreturn]] void fail(const std::string& problem) const { throw Error(file_ + " " + problem); }

  /// Fails, saying the file is cut inside `field`, unless n more bytes are left.
  void need(std::size_t n, const std::string& field) const {
    if (n > remaining())
      fail("is truncated: it ends inside " + field + " (" + std::to_string(n) + " bytes needed at offset " +
           std::to_string(pos_) + ", " + std::to_string(remaining()) + " left)" + truncated_advice_);
  }

 private:
  const std::string& bytes_;
  std::string file_;
  std::string truncated_advice_;
  std::size_t pos_ = 0;
};

/// Every byte of the file at `path`. Throws Error("<file> cannot be opened: <why>"), with
/// `missing_hint` after it when there is no such file, or Error("<file> cannot be read: <why>").
template <typename Error>
std::string read_whole_file(const std::string& path, const std::string& file, const std::string& missing_hint = "") {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    throw Error(file + " cannot be opened: " + std::strerror(err) + (err == ENOENT ? missing_hint : ""));
  }
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error(file + " cannot be read: " + std::strerror(errno));
  return bytes;
}

}  // namespace course
