// Reading and checking the addon's JavaScript arguments. The TypeScript layer checks the same
// things first; these checks make a direct or mistaken call an exception instead of a crash.
#pragma once

#include <napi.h>

#include <cstddef>
#include <cstdint>

#include "codes.h"

namespace rxccl {

// The bytes of a Uint8Array argument (any byte offset), which must not be detached.
struct Bytes {
  uint8_t* data;
  size_t length;
};

void ExpectArgumentCount(const Napi::CallbackInfo& info, size_t required, size_t allowed);
DType DTypeArgument(const Napi::CallbackInfo& info, size_t index);
// Rejects an op the element type does not support (bitwise ops on floats).
Op OpArgument(const Napi::CallbackInfo& info, size_t index, DType type);
Bytes BytesArgument(const Napi::CallbackInfo& info, size_t index, const char* name);
// The same check for a value that is not an argument itself (an entry of an array argument).
Bytes BytesOf(Napi::Env env, const Napi::Value& value, const char* name);
// A non-negative integer no larger than Number.MAX_SAFE_INTEGER.
size_t CountArgument(const Napi::CallbackInfo& info, size_t index, const char* name);

// The address of `elements` elements of `width` bytes starting `offset` elements into `bytes`,
// after checking that they lie inside it.
uint8_t* ElementRange(Napi::Env env, const Bytes& bytes, size_t offset, size_t elements, size_t width,
                      const char* name);

// elements * width (or any product of sizes), as a KERNEL error when it overflows.
size_t CheckedProduct(Napi::Env env, size_t a, size_t b, const char* what);

// Whether [a, a + a_length) and [b, b + b_length) share a byte.
bool Overlaps(const uint8_t* a, size_t a_length, const uint8_t* b, size_t b_length);

}  // namespace rxccl
