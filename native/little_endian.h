// Unsigned integers as little-endian bytes, whatever the host's order: the wire's and the shared
// segments' layouts (docs/protocol.md) are little-endian byte by byte.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rxccl {

template <typename T>
inline void PutLittleEndian(uint8_t* at, T value) {
  for (size_t i = 0; i < sizeof(T); i++) at[i] = uint8_t(value >> (8 * i));
}

template <typename T>
inline T GetLittleEndian(const uint8_t* at) {
  T value = 0;
  for (size_t i = 0; i < sizeof(T); i++) value |= T(at[i]) << (8 * i);
  return value;
}

}  // namespace rxccl
