/// @file little_endian.hpp
/// @brief Unsigned integers as bytes, least significant first: the byte order of the course's
/// binary files (model files, checkpoints), so a file is the same on any machine whatever its
/// own byte order. Both writers and both readers use these, so the two formats cannot drift apart.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace course {

/// Appends the sizeof(Unsigned) bytes of `v` to `out`, least significant first.
template <typename Unsigned>
void put_little_endian(std::string& out, Unsigned v) {
  for (std::size_t i = 0; i < sizeof(Unsigned); ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

inline void put_u32(std::string& out, std::uint32_t v) { put_little_endian(out, v); }
inline void put_u64(std::string& out, std::uint64_t v) { put_little_endian(out, v); }

/// The Unsigned stored at bytes[at ...] least significant first; the caller has checked that
/// sizeof(Unsigned) bytes are there.
template <typename Unsigned>
Unsigned get_little_endian(const std::string& bytes, std::size_t at) {
  Unsigned v = 0;
  for (std::size_t i = 0; i < sizeof(Unsigned); ++i)
    v |= static_cast<Unsigned>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  return v;
}

}  // namespace course
