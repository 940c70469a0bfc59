#include "errors.h"

namespace rxccl {
namespace {

[[noreturn]] void ThrowWithCode(Napi::Env env, const char* code, const std::string& message) {
  Napi::Error error = Napi::Error::New(env, "rxccl kernel: " + message);
  error.Set("code", Napi::String::New(env, code));
  throw error;
}

}  // namespace

void ThrowKernelError(Napi::Env env, const std::string& message) { ThrowWithCode(env, "KERNEL", message); }

void ThrowConfigurationError(Napi::Env env, const std::string& message) {
  ThrowWithCode(env, "INVALID_CONFIGURATION", message);
}

}  // namespace rxccl
