#include "args.h"

#include <string>

#include "errors.h"

namespace rxccl {
namespace {

constexpr double kMaxSafeInteger = 9007199254740991.0;

std::string Position(size_t index) { return "argument " + std::to_string(index); }

}  // namespace

void ExpectArgumentCount(const Napi::CallbackInfo& info, size_t required, size_t allowed) {
  if (info.Length() < required || info.Length() > allowed) {
    ThrowKernelError(info.Env(), "expected " + std::to_string(required) +
                                     (allowed > required ? " or " + std::to_string(allowed) : std::string()) +
                                     " arguments, got " + std::to_string(info.Length()));
  }
}

DType DTypeArgument(const Napi::CallbackInfo& info, size_t index) {
  const Napi::Value value = info[index];
  if (value.IsNumber()) {
    const double code = value.As<Napi::Number>().DoubleValue();
    if (code >= double(DType::kU8) && code <= double(DType::kF64) && code == double(int(code))) {
      return DType(int(code));
    }
  }
  ThrowConfigurationError(info.Env(), Position(index) + ": unknown element type code; expected 1 (u8) .. 12 (f64)");
}

Op OpArgument(const Napi::CallbackInfo& info, size_t index, DType type) {
  const Napi::Value value = info[index];
  if (value.IsNumber()) {
    const double code = value.As<Napi::Number>().DoubleValue();
    if (code >= double(Op::kSum) && code <= double(Op::kBxor) && code == double(int(code))) {
      const Op op = Op(int(code));
      if (IsBitwise(op) && IsFloat(type)) {
        ThrowConfigurationError(info.Env(), "bitwise reduce ops (band, bor, bxor) need an integer element type, got element type code " +
                                                std::to_string(int(type)));
      }
      return op;
    }
  }
  ThrowConfigurationError(info.Env(), Position(index) + ": unknown reduce op code; expected 1 (sum) .. 8 (bxor)");
}

Bytes BytesOf(Napi::Env env, const Napi::Value& value, const char* name) {
  if (!value.IsTypedArray() || value.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    ThrowKernelError(env, std::string(name) + " must be a Uint8Array");
  }
  Napi::Uint8Array array = value.As<Napi::Uint8Array>();
  if (array.ArrayBuffer().IsDetached()) {
    ThrowKernelError(env, std::string(name) + " is detached (its ArrayBuffer was transferred)");
  }
  return Bytes{array.Data(), array.ByteLength()};
}

Bytes BytesArgument(const Napi::CallbackInfo& info, size_t index, const char* name) { return BytesOf(info.Env(), info[index], name); }

size_t CountArgument(const Napi::CallbackInfo& info, size_t index, const char* name) {
  const Napi::Value value = info[index];
  if (value.IsNumber()) {
    const double number = value.As<Napi::Number>().DoubleValue();
    if (number >= 0 && number <= kMaxSafeInteger && number == double(uint64_t(number))) return size_t(number);
  }
  ThrowKernelError(info.Env(), std::string(name) + " must be a non-negative safe integer");
}

size_t CheckedProduct(Napi::Env env, size_t a, size_t b, const char* what) {
  size_t product;
  if (__builtin_mul_overflow(a, b, &product)) ThrowKernelError(env, std::string(what) + " overflows");
  return product;
}

uint8_t* ElementRange(Napi::Env env, const Bytes& bytes, size_t offset, size_t elements, size_t width,
                      const char* name) {
  const size_t first = CheckedProduct(env, offset, width, name);
  const size_t length = CheckedProduct(env, elements, width, name);
  size_t end;
  if (__builtin_add_overflow(first, length, &end) || end > bytes.length) {
    ThrowKernelError(env, std::string(name) + " has " + std::to_string(bytes.length) + " bytes, too few for " +
                              std::to_string(elements) + " elements of " + std::to_string(width) +
                              " bytes at element offset " + std::to_string(offset));
  }
  return bytes.data + first;
}

bool Overlaps(const uint8_t* a, size_t a_length, const uint8_t* b, size_t b_length) {
  if (a_length == 0 || b_length == 0) return false;
  return a < b + b_length && b < a + a_length;
}

}  // namespace rxccl
